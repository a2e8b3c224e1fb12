export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

export class UserResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserResolutionError';
  }
}

export function parsePasswd(text: string): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const [name, , uid, gid] = line.split(':');
    const u = Number(uid);
    const g = Number(gid);
    if (!name || !Number.isInteger(u) || !Number.isInteger(g) || uid === '' || gid === '') continue;
    out.push({ name, uid: u, gid: g });
  }
  return out;
}

export function parseGroup(text: string): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const [name, , gid, members] = line.split(':');
    const g = Number(gid);
    if (!name || gid === '' || !Number.isInteger(g)) continue;
    out.push({ name, gid: g, members: (members ?? '').split(',').map((m) => m.trim()).filter(Boolean) });
  }
  return out;
}

export interface UserRequest {
  /** The image config's User: "", "uid", "name", "uid:gid", "name:group". */
  imageUser: string;
  runAsUser?: number;
  runAsGroup?: number;
  runAsUsername?: string;
  supplementalGroups: readonly number[];
  /** Merge adds the groups /etc/group gives the user; Strict uses only those requested. */
  policy: 'Merge' | 'Strict';
}

export interface ResolvedUser {
  uid: number;
  gid: number;
  additionalGids: number[];
}

const NUMERIC = /^\d+$/;

function toId(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0 || n > 0xfffffffe) throw new UserResolutionError(`${what} ${text} is out of range`);
  return n;
}

/**
 * The uid, gid and supplementary groups a container's process runs with, worked out as kubelet
 * users expect: run_as_user / run_as_username win over the image's User; a numeric uid missing
 * from /etc/passwd is fine (gid 0), a user or group name missing from the image's files is not.
 */
export function resolveUser(req: UserRequest, passwd: readonly PasswdEntry[], groups: readonly GroupEntry[]): ResolvedUser {
  if (req.runAsGroup !== undefined && req.runAsUser === undefined && !req.runAsUsername) {
    throw new UserResolutionError('run_as_group is set without run_as_user or run_as_username: the CRI allows a group only together with a user');
  }
  let userPart: string;
  let groupPart: string | undefined;
  if (req.runAsUser !== undefined) {
    userPart = String(req.runAsUser);
  } else if (req.runAsUsername) {
    userPart = req.runAsUsername;
  } else {
    const [u, g] = req.imageUser.split(':', 2);
    userPart = u ?? '';
    groupPart = g;
  }

  let uid = 0;
  let gid = 0;
  let name: string | undefined;
  if (userPart === '') {
    name = passwd.find((p) => p.uid === 0)?.name ?? 'root';
  } else if (NUMERIC.test(userPart)) {
    uid = toId(userPart, 'uid');
    const entry = passwd.find((p) => p.uid === uid);
    if (entry) {
      gid = entry.gid;
      name = entry.name;
    }
  } else {
    const entry = passwd.find((p) => p.name === userPart);
    if (!entry) throw new UserResolutionError(`user "${userPart}" is not in the image's /etc/passwd; use a numeric uid or add the user to the image`);
    uid = entry.uid;
    gid = entry.gid;
    name = entry.name;
  }

  if (groupPart !== undefined && groupPart !== '') {
    if (NUMERIC.test(groupPart)) gid = toId(groupPart, 'gid');
    else {
      const entry = groups.find((g) => g.name === groupPart);
      if (!entry) throw new UserResolutionError(`group "${groupPart}" is not in the image's /etc/group`);
      gid = entry.gid;
    }
  }
  if (req.runAsGroup !== undefined) gid = req.runAsGroup;

  const extra: number[] = [];
  if (req.policy === 'Merge' && name !== undefined) {
    for (const g of groups) if (g.members.includes(name)) extra.push(g.gid);
  }
  extra.push(...req.supplementalGroups);
  // The primary group comes first, as `id -G` lists it and as ContainerStatus reports it.
  const additionalGids = [...new Set([gid, ...extra])];
  return { uid, gid, additionalGids };
}
