/**
 * Requests for any CRI method with every field set to one hostile value, built from the method's
 * request schema so that every string, number, enum, bytes, repeated and map field of the
 * request (and of the messages in it) is covered.
 *
 *   hostileRequest(service, method, values): Record<string, unknown>
 *   HOSTILE_VALUES: Record<string, HostileValues>   path-like, absolute, non-UTF-8, negative, huge
 */
import { loadCri, type CriServices } from '@skiff/proto';

type Schema = CriServices['schema'];
type MessageSchema = ReturnType<Schema['lookupType']>;
type FieldSchema = MessageSchema['fieldsArray'][number];

export interface HostileValues {
  string: string;
  /** For 32-bit fields. */
  int32: number;
  /** For 64-bit fields (the loader carries them as strings). */
  int64: string;
  enumValue: number;
  bytes: Buffer;
}

const KiB = 1024;

export const HOSTILE_VALUES: Record<string, HostileValues> = {
  'path-like': { string: '../../../../../../../etc/passwd', int32: -1, int64: '-1', enumValue: 99, bytes: Buffer.from('../../etc') },
  absolute: { string: '/etc/shadow', int32: 2_147_483_647, int64: '9223372036854775807', enumValue: -1, bytes: Buffer.alloc(0) },
  // A lone surrogate is written as the bytes ED A0 80: not UTF-8.
  'non-UTF-8': { string: 'a\ud800b/\udfffc', int32: -2_147_483_648, int64: '-9223372036854775808', enumValue: 2_147_483_647, bytes: Buffer.from([0xff, 0xfe, 0x00]) },
  'slash and NUL': { string: 'a/b\u0000c', int32: 0, int64: '0', enumValue: 0, bytes: Buffer.from([0]) },
  huge: { string: 'x'.repeat(64 * KiB), int32: 1_000_000_000, int64: '4611686018427387904', enumValue: 1, bytes: Buffer.alloc(64 * KiB, 0xff) },
};

function scalar(type: string, values: HostileValues): unknown {
  switch (type) {
    case 'string':
      return values.string;
    case 'bytes':
      return values.bytes;
    case 'bool':
      return true;
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return values.int64;
    case 'uint64':
    case 'fixed64':
      return values.int64.replace('-', '');
    case 'uint32':
    case 'fixed32':
      return Math.abs(values.int32);
    case 'double':
    case 'float':
      return values.int32 / 3;
    default:
      return values.int32;
  }
}

function fill(type: MessageSchema, values: HostileValues, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const resolved = field.resolve().resolvedType;
    const message = resolved !== null && 'fieldsArray' in resolved ? resolved : undefined;
    const plain = (): unknown => (resolved === null ? scalar(field.type, values) : values.enumValue);
    if ((field.map || message) && depth === 0) continue;
    if (field.map) {
      const key = scalar((field as FieldSchema & { keyType: string }).keyType, values);
      out[field.name] = { [String(key)]: message ? {} : plain() };
      continue;
    }
    const value = message ? fill(message, values, depth - 1) : plain();
    out[field.name] = field.repeated ? [value] : value;
  }
  return out;
}

export function hostileRequest(service: 'RuntimeService' | 'ImageService', method: string, values: HostileValues): Record<string, unknown> {
  const schema = loadCri().schema.lookupService(service).methods[method];
  if (!schema) throw new Error(`no method ${method} in runtime.v1.${service}`);
  schema.resolve();
  return fill(schema.resolvedRequestType!, values, 6);
}
