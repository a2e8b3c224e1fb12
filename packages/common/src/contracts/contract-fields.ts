import { ContractViolation } from './contract-error.js';

/** Field checks shared by the contracts' parsers; each violation names the field. */

/** A boolean, or undefined when the field is absent. */
export function maybeBool(v: unknown, field: string): boolean | undefined {
  if (v !== undefined && typeof v !== 'boolean') throw new ContractViolation(field, 'must be a boolean');
  return v;
}

/** A boolean, false when the field is absent. */
export function optionalBool(v: unknown, field: string): boolean {
  return maybeBool(v, field) ?? false;
}

/** A string, or undefined when the field is absent. */
export function maybeString(v: unknown, field: string): string | undefined {
  if (v !== undefined && typeof v !== 'string') throw new ContractViolation(field, 'must be a string');
  return v;
}

export function requiredString(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') throw new ContractViolation(field, 'is required');
  return v;
}

export function absolutePath(v: unknown, field: string): string {
  if (typeof v !== 'string' || !v.startsWith('/')) throw new ContractViolation(field, 'must be an absolute path');
  return v;
}

export function strings(v: unknown, field: string, nonEmpty: boolean): string[] {
  if (!Array.isArray(v) || !v.every((a) => typeof a === 'string')) throw new ContractViolation(field, 'must be a list of strings');
  if (nonEmpty && v.length === 0) throw new ContractViolation(field, 'is required');
  return v as string[];
}

export function integer(v: unknown, field: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ContractViolation(field, `must be an integer from ${min} to ${max}`);
  return v;
}
