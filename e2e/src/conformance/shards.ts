/**
 * A part of the suite: the selected specs, sorted by name, dealt out in turn to N shards, the specs
 * of one container together (an Ordered container's later specs check what its first one ran, and
 * fail at once without it). Each shard runs on its own, so that the suite can be run in parts whose
 * figures add up to the whole's.
 *
 *   parseShard("K/N"): { index, count }
 *   shardOf(names, shard, containerOf?): string[]   the names of shard K; containerOf groups them
 *                                                   (each name alone without it)
 *   exactNamesPattern(names): string       a Go regular expression matching exactly these spec texts
 */

import { specTextPattern } from './unrunnable-specs.js';

export interface Shard {
  /** 1-based. */
  index: number;
  count: number;
}

export function parseShard(text: string): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || count < 1 || index < 1 || index > count) throw new Error(`--shard takes K/N with 1 <= K <= N, not ${JSON.stringify(text)}`);
  return { index, count };
}

export function shardOf(names: readonly string[], shard: Shard, containerOf: (name: string) => string = (name) => name): string[] {
  const groups = new Map<string, string[]>();
  for (const name of [...names].sort()) {
    const key = containerOf(name);
    const group = groups.get(key);
    if (group) group.push(name);
    else groups.set(key, [name]);
  }
  return [...groups.values()].filter((_, i) => i % shard.count === shard.index - 1).flat();
}

/**
 * Ginkgo matches --focus against a spec's texts joined by spaces, after a prefix of its own (the
 * suite's description): a name is matched from a word's start to the end. Runs of spaces count as one.
 */
export function exactNamesPattern(names: readonly string[]): string {
  return `(?:^|\\s)(?:${names.map(specTextPattern).join('|')})$`;
}
