/** The current time as CRI carries timestamps: nanoseconds since the epoch, a decimal string (int64). */
export function nowNanos(): string {
  return (BigInt(Date.now()) * 1_000_000n).toString();
}
