/**
 * Requests for any CRI method with every field set to one hostile value, built from the method's
 * protobuf descriptor so that every string, number, enum, bytes, repeated and map field of the
 * request (and of the messages in it) is covered.
 *
 *   hostileRequest(method, values): Record<string, unknown>
 *   HOSTILE_VALUES: Record<string, HostileValues>   path-like, absolute, non-UTF-8, negative, huge
 */
import { loadCri } from '@skiff/proto';

export interface HostileValues {
  string: string;
  /** For 32-bit fields. */
  int32: number;
  /** For 64-bit fields (the loader carries them as strings). */
  int64: string;
  enumValue: number;
  bytes: Buffer;
}

interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}

interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType?: MessageDescriptor[];
  options?: { mapEntry?: boolean } | null;
}

export interface MethodDescriptor {
  requestType: { type: MessageDescriptor };
  responseStream: boolean;
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

const v1 = loadCri().runtime.v1 as unknown as Record<string, { type?: MessageDescriptor }>;

function messageType(name: string, scope: MessageDescriptor | undefined): MessageDescriptor {
  const nested = scope?.nestedType?.find((n) => n.name === name);
  if (nested) return nested;
  const top = v1[name]?.type;
  if (!top) throw new Error(`no message type ${name} in runtime.v1`);
  return top;
}

function scalar(field: FieldDescriptor, values: HostileValues): unknown {
  switch (field.type) {
    case 'TYPE_STRING':
      return values.string;
    case 'TYPE_BYTES':
      return values.bytes;
    case 'TYPE_BOOL':
      return true;
    case 'TYPE_ENUM':
      return values.enumValue;
    case 'TYPE_INT64':
    case 'TYPE_SINT64':
    case 'TYPE_SFIXED64':
      return values.int64;
    case 'TYPE_UINT64':
    case 'TYPE_FIXED64':
      return values.int64.replace('-', '');
    case 'TYPE_UINT32':
    case 'TYPE_FIXED32':
      return Math.abs(values.int32);
    case 'TYPE_DOUBLE':
    case 'TYPE_FLOAT':
      return values.int32 / 3;
    default:
      return values.int32;
  }
}

function fill(type: MessageDescriptor, values: HostileValues, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.field) {
    if (field.type !== 'TYPE_MESSAGE') {
      out[field.name] = field.label === 'LABEL_REPEATED' ? [scalar(field, values)] : scalar(field, values);
      continue;
    }
    if (depth === 0) continue;
    const inner = messageType(field.typeName, type);
    if (inner.options?.mapEntry) {
      const [key, value] = inner.field;
      out[field.name] = { [String(scalar(key!, values))]: value!.type === 'TYPE_MESSAGE' ? {} : scalar(value!, values) };
    } else {
      const message = fill(inner, values, depth - 1);
      out[field.name] = field.label === 'LABEL_REPEATED' ? [message] : message;
    }
  }
  return out;
}

export function hostileRequest(method: MethodDescriptor, values: HostileValues): Record<string, unknown> {
  return fill(method.requestType.type, values, 6);
}
