import { runCommand } from '@skiff/common';

/**
 * Node has no xattr calls, so xattrs go through attr's setfattr/getfattr, in their dump format
 * ("# file: <path>" then "<name>=0s<base64>"), batched into one process per layer.
 */
export interface XattrAssignment {
  /** Relative to the tree root; "" is the root itself. */
  path: string;
  name: string;
  value: Buffer;
}

/** Octal-escapes anything setfattr's unquoting would otherwise misread. */
function escape(text: string, alsoEscape: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const char = String.fromCharCode(byte);
    if (byte <= 0x20 || byte >= 0x7f || char === '\\' || alsoEscape.includes(char)) out += `\\${byte.toString(8).padStart(3, '0')}`;
    else out += char;
  }
  return out;
}

function unescape(text: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\' && /^[0-7]{3}$/.test(text.slice(i + 1, i + 4))) {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(...Buffer.from(text[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Sets all assignments without following symlinks; paths must already be known to be safe. */
export async function applyXattrs(root: string, assignments: readonly XattrAssignment[]): Promise<void> {
  if (assignments.length === 0) return;
  const byPath = new Map<string, XattrAssignment[]>();
  for (const assignment of assignments) {
    const list = byPath.get(assignment.path);
    if (list) list.push(assignment);
    else byPath.set(assignment.path, [assignment]);
  }
  let dump = '';
  for (const [path, list] of byPath) {
    dump += `# file: ${escape(path === '' ? '.' : `./${path}`, '')}\n`;
    for (const { name, value } of list) dump += `${escape(name, '=')}=0s${value.toString('base64')}\n`;
    dump += '\n';
  }
  const result = await runCommand('setfattr', ['-h', '--restore=-'], { cwd: root, input: dump });
  if (result.code !== 0) throw new Error(`setting extended attributes failed: ${result.stderr.trim() || `setfattr exited with status ${result.code ?? result.signal}`}`);
}

/** All xattrs of one path (not following a final symlink). */
export async function readXattrs(absolutePath: string): Promise<Map<string, Buffer>> {
  const result = await runCommand('getfattr', ['-h', '-d', '-m', '-', '-e', 'base64', '--absolute-names', '--', absolutePath]);
  if (result.code !== 0) throw new Error(`getfattr exited with status ${result.code ?? result.signal}: ${result.stderr.trim() || '(no message)'}`);
  const xattrs = new Map<string, Buffer>();
  for (const line of result.stdout.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const equals = line.indexOf('=');
    if (equals === -1) {
      xattrs.set(unescape(line), Buffer.alloc(0));
      continue;
    }
    const name = unescape(line.slice(0, equals));
    const raw = line.slice(equals + 1);
    if (raw.startsWith('0s')) xattrs.set(name, Buffer.from(raw.slice(2), 'base64'));
    else if (raw.startsWith('0x')) xattrs.set(name, Buffer.from(raw.slice(2), 'hex'));
    else xattrs.set(name, Buffer.from(unescape(raw.replace(/^"|"$/g, '')), 'utf8'));
  }
  return xattrs;
}

export const OPAQUE_XATTR = 'trusted.overlay.opaque';

export async function isOpaqueDir(absolutePath: string): Promise<boolean> {
  const result = await runCommand('getfattr', ['-h', '--only-values', '-n', OPAQUE_XATTR, '--absolute-names', '--', absolutePath]);
  return result.code === 0 && result.stdout === 'y';
}
