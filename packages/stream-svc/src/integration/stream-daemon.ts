import { spawn, type ChildProcess } from 'node:child_process';

const MAIN = new URL('../main.js', import.meta.url).pathname;

/** stream-svc as a child process; resolves with its base URL once it is ready. */
export class StreamDaemon {
  child: ChildProcess | undefined;
  output: string[] = [];
  baseUrl = '';

  constructor(private readonly configPath: string) {}

  async start(): Promise<void> {
    const child = spawn(process.execPath, [MAIN, '--config', this.configPath], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SKIFF_SUPERVISED: '1' } });
    this.child = child;
    this.baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`stream-svc not ready within 15 s:\n${this.output.join('\n')}`)), 15_000);
      const collect = (chunk: Buffer): void => {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
          this.output.push(line);
          try {
            const entry = JSON.parse(line) as { msg?: string; url?: string };
            if (entry.msg === 'stream service ready' && entry.url) {
              clearTimeout(timer);
              resolve(entry.url);
            }
          } catch {
            // not a log line
          }
        }
      };
      child.stdout?.on('data', collect);
      child.stderr?.on('data', collect);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`stream-svc exited at start (${code}):\n${this.output.join('\n')}`));
      });
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}
