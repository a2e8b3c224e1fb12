import { spawn } from 'node:child_process';

export interface ToolResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** Runs a helper binary with optional stdin; resolves with its exit code (never rejects on non-zero). */
export function runTool(command: string, args: string[], options: { cwd?: string; input?: string | Buffer } = {}): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (err) => reject(new Error(`cannot run ${command}: ${err.message}`)));
    child.on('close', (code, signal) =>
      resolve({ code: code ?? (signal ? 128 : 1), stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8').trim() }),
    );
    // The tool may exit before reading all of stdin; that surfaces through the exit code instead.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

export async function runToolOrThrow(command: string, args: string[], options: { cwd?: string; input?: string | Buffer } = {}): Promise<Buffer> {
  const result = await runTool(command, args, options);
  if (result.code !== 0) throw new Error(`${command} exited with status ${result.code}: ${result.stderr || '(no message)'}`);
  return result.stdout;
}
