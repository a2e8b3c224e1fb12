/**
 * The OCI runtime-spec `process` object (config.json, version 1.0.2) as Skiff writes it: what
 * runtime-svc puts in a container's spec, and what an Exec carries to stream-svc, which writes it
 * (with the exec's args and terminal) as the process runc or conmon runs.
 */
import { ContractViolation, isObject, rejectUnknownFields } from './contract-error.js';
import { absolutePath, integer, maybeBool, maybeString, strings } from './contract-fields.js';

export interface OciUser {
  uid: number;
  gid: number;
  umask?: number;
  additionalGids?: number[];
}

export interface OciCapabilities {
  bounding: string[];
  effective: string[];
  permitted: string[];
  inheritable?: string[];
  ambient?: string[];
}

export interface OciRlimit {
  type: string;
  hard: number;
  soft: number;
}

export interface OciProcess {
  terminal?: boolean;
  consoleSize?: { height: number; width: number };
  user: OciUser;
  args: string[];
  env: string[];
  cwd: string;
  capabilities?: OciCapabilities;
  rlimits?: OciRlimit[];
  noNewPrivileges?: boolean;
  apparmorProfile?: string;
  oomScoreAdj?: number;
  selinuxLabel?: string;
}

const PROCESS_FIELDS = ['terminal', 'consoleSize', 'user', 'args', 'env', 'cwd', 'capabilities', 'rlimits', 'noNewPrivileges', 'apparmorProfile', 'oomScoreAdj', 'selinuxLabel'] as const;
const CAPABILITY_SETS = ['bounding', 'effective', 'permitted', 'inheritable', 'ambient'] as const;
const MAX_ID = 0xffffffff;
/** RLIM_INFINITY as a JSON number reads back as 2^64. */
const MAX_RLIMIT = 2 ** 64;

function object(v: unknown, field: string, what: string): Record<string, unknown> {
  if (!isObject(v)) throw new ContractViolation(field, `must be ${what}`);
  return v;
}

function user(v: unknown, field: string): OciUser {
  const o = object(v, field, 'an object with uid and gid');
  rejectUnknownFields(o, ['uid', 'gid', 'umask', 'additionalGids'], `${field}.`);
  const out: OciUser = { uid: integer(o['uid'], `${field}.uid`, 0, MAX_ID), gid: integer(o['gid'], `${field}.gid`, 0, MAX_ID) };
  if (o['umask'] !== undefined) out.umask = integer(o['umask'], `${field}.umask`, 0, 0o777);
  if (o['additionalGids'] !== undefined) {
    const gids = o['additionalGids'];
    if (!Array.isArray(gids)) throw new ContractViolation(`${field}.additionalGids`, 'must be a list of group ids');
    out.additionalGids = gids.map((g, i) => integer(g, `${field}.additionalGids[${i}]`, 0, MAX_ID));
  }
  return out;
}

function capabilities(v: unknown, field: string): OciCapabilities {
  const o = object(v, field, 'an object of capability sets');
  rejectUnknownFields(o, CAPABILITY_SETS, `${field}.`);
  const out: OciCapabilities = {
    bounding: strings(o['bounding'], `${field}.bounding`, false),
    effective: strings(o['effective'], `${field}.effective`, false),
    permitted: strings(o['permitted'], `${field}.permitted`, false),
  };
  if (o['inheritable'] !== undefined) out.inheritable = strings(o['inheritable'], `${field}.inheritable`, false);
  if (o['ambient'] !== undefined) out.ambient = strings(o['ambient'], `${field}.ambient`, false);
  return out;
}

function rlimits(v: unknown, field: string): OciRlimit[] {
  if (!Array.isArray(v)) throw new ContractViolation(field, 'must be a list of rlimits');
  return v.map((r, i) => {
    const o = object(r, `${field}[${i}]`, 'an object with type, hard and soft');
    rejectUnknownFields(o, ['type', 'hard', 'soft'], `${field}[${i}].`);
    const type = o['type'];
    if (typeof type !== 'string' || !type.startsWith('RLIMIT_')) throw new ContractViolation(`${field}[${i}].type`, 'must name an RLIMIT_ resource');
    return { type, hard: integer(o['hard'], `${field}[${i}].hard`, 0, MAX_RLIMIT), soft: integer(o['soft'], `${field}[${i}].soft`, 0, MAX_RLIMIT) };
  });
}

/** Checks an OCI process received from another service, field by field; a violation names the field under `field`. */
export function parseOciProcess(v: unknown, field: string): OciProcess {
  const o = object(v, field, "the container's OCI process");
  rejectUnknownFields(o, PROCESS_FIELDS, `${field}.`);
  const out: OciProcess = {
    user: user(o['user'], `${field}.user`),
    args: strings(o['args'], `${field}.args`, false),
    env: strings(o['env'], `${field}.env`, false),
    cwd: absolutePath(o['cwd'], `${field}.cwd`),
  };
  const terminal = maybeBool(o['terminal'], `${field}.terminal`);
  if (terminal !== undefined) out.terminal = terminal;
  if (o['consoleSize'] !== undefined) {
    const size = object(o['consoleSize'], `${field}.consoleSize`, 'an object with height and width');
    rejectUnknownFields(size, ['height', 'width'], `${field}.consoleSize.`);
    out.consoleSize = { height: integer(size['height'], `${field}.consoleSize.height`, 0, 0xffff), width: integer(size['width'], `${field}.consoleSize.width`, 0, 0xffff) };
  }
  if (o['capabilities'] !== undefined) out.capabilities = capabilities(o['capabilities'], `${field}.capabilities`);
  if (o['rlimits'] !== undefined) out.rlimits = rlimits(o['rlimits'], `${field}.rlimits`);
  const noNewPrivileges = maybeBool(o['noNewPrivileges'], `${field}.noNewPrivileges`);
  if (noNewPrivileges !== undefined) out.noNewPrivileges = noNewPrivileges;
  const apparmorProfile = maybeString(o['apparmorProfile'], `${field}.apparmorProfile`);
  if (apparmorProfile !== undefined) out.apparmorProfile = apparmorProfile;
  if (o['oomScoreAdj'] !== undefined) out.oomScoreAdj = integer(o['oomScoreAdj'], `${field}.oomScoreAdj`, -1000, 1000);
  const selinuxLabel = maybeString(o['selinuxLabel'], `${field}.selinuxLabel`);
  if (selinuxLabel !== undefined) out.selinuxLabel = selinuxLabel;
  return out;
}
