/**
 * The largest gRPC message the kubelet and crictl accept (their max receive size): an ExecSync reply
 * bigger than this reaches them as ResourceExhausted instead of output.
 */
export const CRI_CLIENT_MESSAGE_LIMIT = 16 * 1024 * 1024;

/**
 * What an ExecSyncResponse adds to its output: a tag byte and a length of at most 4 bytes (for less
 * than 2^28 bytes) for stdout and stderr each, and a tag byte and at most 10 bytes (a negative
 * int32) for the exit code.
 */
const REPLY_OVERHEAD_BYTES = 2 * (1 + 4) + (1 + 10);

/** Output bytes a reply can carry and still fit CRI_CLIENT_MESSAGE_LIMIT. */
export const EXEC_REPLY_OUTPUT_LIMIT = CRI_CLIENT_MESSAGE_LIMIT - REPLY_OVERHEAD_BYTES;

/** The line that ends stderr when output was dropped. */
export const EXEC_TRUNCATED_NOTICE = `[skiff: output truncated: an ExecSync reply carries at most ${EXEC_REPLY_OUTPUT_LIMIT} bytes of stdout and stderr together; the rest was dropped]\n`;

export interface ExecReplyOutput {
  stdout: Buffer;
  stderr: Buffer;
  truncated: boolean;
}

/**
 * An exec's output cut to fit one reply, stdout and stderr together: while both are over, each
 * keeps half; one that needs less leaves the rest to the other. Cut output ends with
 * EXEC_TRUNCATED_NOTICE on stderr. `alreadyCut` says output was dropped before it came here.
 */
export function fitExecReply(stdout: Buffer, stderr: Buffer, alreadyCut: boolean): ExecReplyOutput {
  if (!alreadyCut && stdout.length + stderr.length <= EXEC_REPLY_OUTPUT_LIMIT) return { stdout, stderr, truncated: false };
  const budget = EXEC_REPLY_OUTPUT_LIMIT - Buffer.byteLength(EXEC_TRUNCATED_NOTICE) - 1;
  const keepErr = Math.min(stderr.length, Math.max(Math.floor(budget / 2), budget - stdout.length));
  const keepOut = Math.min(stdout.length, budget - keepErr);
  const err = stderr.subarray(0, keepErr);
  const separator = err.length > 0 && err[err.length - 1] !== 0x0a ? '\n' : '';
  return {
    stdout: stdout.subarray(0, keepOut),
    stderr: Buffer.concat([err, Buffer.from(separator + EXEC_TRUNCATED_NOTICE)]),
    truncated: true,
  };
}
