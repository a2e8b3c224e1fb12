/**
 * The container's environment: HOSTNAME first, then the image's variables, then the container
 * config's. A later definition of a name replaces the earlier value where it stood.
 */
export function mergeEnv(hostname: string, imageEnv: readonly string[], configEnv: readonly { key: string; value: string }[]): string[] {
  const order: string[] = [];
  const values = new Map<string, string>();
  const set = (key: string, value: string): void => {
    if (!values.has(key)) order.push(key);
    values.set(key, value);
  };
  if (hostname) set('HOSTNAME', hostname);
  for (const entry of imageEnv) {
    const eq = entry.indexOf('=');
    if (eq <= 0) continue;
    set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  for (const { key, value } of configEnv) if (key) set(key, value);
  return order.map((key) => `${key}=${values.get(key) ?? ''}`);
}
