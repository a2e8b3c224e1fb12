/**
 * runSuiteProcess(command, args, { cwd, env?, logPath }): Promise<number>
 *   runs a test suite's process with its output (stdout and stderr) on this process's stdout and
 *   in the file `logPath`, SIGINT and SIGTERM passed on to it; resolves with its exit code (1 when
 *   a signal ended it).
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

export async function runSuiteProcess(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; logPath: string }): Promise<number> {
  const output = createWriteStream(options.logPath);
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      output.write(chunk);
    });
  }
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => child.once('close', (c) => resolve(c ?? 1)));
  process.off('SIGINT', forward).off('SIGTERM', forward);
  output.end();
  return code;
}
