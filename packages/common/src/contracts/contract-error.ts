/**
 * A message on an internal socket that does not follow its contract. The receiving service answers
 * it with HTTP 400 and `message`, which names the offending field.
 */
export class ContractViolation extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field} ${problem}`);
    this.name = 'ContractViolation';
  }
}

/** The JSON body of every non-2xx answer on the internal sockets. */
export interface ErrorAnswer {
  message: string;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Rejects fields the contract does not name, so a sender cannot believe it was obeyed. */
export function rejectUnknownFields(body: Record<string, unknown>, known: readonly string[], prefix = ''): void {
  const extra = Object.keys(body).find((k) => !known.includes(k));
  if (extra !== undefined) throw new ContractViolation(`${prefix}${extra}`, 'is not part of the request');
}
