/**
 * What an exec or attach stream has delivered so far, whatever protocol carried it: the output, the
 * final metav1.Status, and waits for the output to match.
 */
export interface RemoteStatus {
  status: 'Success' | 'Failure';
  reason?: string;
  message?: string;
  details?: { causes?: { reason: string; message: string }[] };
}

export abstract class RemoteOutput {
  stdout = '';
  stderr = '';
  status: RemoteStatus | undefined;
  private watchers: (() => void)[] = [];

  /** Whether the stream has ended, so that a wait can give up at once. */
  protected abstract hasEnded(): boolean;

  /** Called by the protocol whenever output, the status or the end arrived. */
  protected notify(): void {
    for (const w of [...this.watchers]) w();
  }

  /** The exit code in the final status: 0 for Success, else the ExitCode cause. */
  exitCode(): number | undefined {
    if (!this.status) return undefined;
    if (this.status.status === 'Success') return 0;
    const cause = this.status.details?.causes?.find((c) => c.reason === 'ExitCode');
    return cause ? Number(cause.message) : undefined;
  }

  waitForStdout(pattern: RegExp, timeoutMs = 10_000): Promise<string> {
    return this.waitFor(() => this.stdout, pattern, timeoutMs, 'stdout');
  }

  waitForStderr(pattern: RegExp, timeoutMs = 10_000): Promise<string> {
    return this.waitFor(() => this.stderr, pattern, timeoutMs, 'stderr');
  }

  private waitFor(text: () => string, pattern: RegExp, timeoutMs: number, name: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(text())) {
          done();
          resolve(text());
        } else if (this.hasEnded()) {
          done();
          reject(new Error(`stream closed before ${name} matched ${pattern}; ${name} was ${JSON.stringify(text())}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${name} did not match ${pattern} within ${timeoutMs} ms; it was ${JSON.stringify(text())}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.watchers = this.watchers.filter((w) => w !== check);
      };
      this.watchers.push(check);
      check();
    });
  }
}
