import { loadConfig, type SkiffConfig } from './config.js';
import type { Logger } from './logger.js';

/** The dotted keys whose values differ between two configurations (lists compare whole). */
export function changedKeys(before: unknown, after: unknown, prefix = ''): string[] {
  const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isTable(before) || !isTable(after)) return JSON.stringify(before) === JSON.stringify(after) ? [] : [prefix];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.flatMap((k) => changedKeys(before[k], after[k], prefix ? `${prefix}.${k}` : k));
}

/**
 * What a service can take without a restart: given the new configuration and the keys that
 * changed, it applies what it can and answers the keys (or key prefixes) it applied. A throw
 * means nothing was applied.
 */
export type ConfigApplier = (next: SkiffConfig, changed: string[]) => Promise<string[]>;

/**
 * Re-reads the configuration on SIGHUP (what `skiff reload` sends), and has the service apply it
 * (and re-read the files it names) even when skiff.toml itself is unchanged. A file that does not load
 * changes nothing: the error, with the key or line at fault, is logged and the service goes on
 * with what it has. Changed keys the service cannot take live are logged as needing a restart.
 */
export function reloadConfigOnSighup(service: string, configPath: string | undefined, initial: SkiffConfig, log: Logger, apply: ConfigApplier): void {
  let current = initial;
  let reloading = Promise.resolve();
  const reload = async (): Promise<void> => {
    let next: SkiffConfig;
    try {
      next = await loadConfig(configPath);
    } catch (err) {
      log.error({ err: (err as Error).message }, 'configuration not reloaded: the file does not load; going on with the previous one');
      return;
    }
    // Applied even when skiff.toml is unchanged: files it names (registries.conf) may have changed.
    const changed = changedKeys(current, next);
    let applied: string[];
    try {
      applied = await apply(next, changed);
    } catch (err) {
      log.error({ err: (err as Error).message, changed }, 'configuration not reloaded; going on with the previous one');
      return;
    }
    const covered = (key: string): boolean => applied.some((a) => key === a || key.startsWith(`${a}.`));
    const needRestart = changed.filter((k) => !covered(k));
    current = next;
    log.info({ applied: changed.filter(covered) }, 'configuration reloaded');
    if (needRestart.length > 0) log.warn({ keys: needRestart }, `these settings take effect only when ${service} restarts`);
  };
  process.on('SIGHUP', () => {
    reloading = reloading.then(reload);
  });
}
