/**
 * A part of the suite: the selected specs, sorted by name, dealt out in turn to N shards. Each shard
 * runs on its own (one spec at a time, as the whole suite does), so that the suite can be run in
 * parts whose figures add up to the whole's.
 *
 *   parseShard("K/N"): { index, count }
 *   shardOf(names, shard): string[]        the names of shard K
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

export function shardOf(names: readonly string[], shard: Shard): string[] {
  return [...names].sort().filter((_, i) => i % shard.count === shard.index - 1);
}

/**
 * Ginkgo matches --focus against a spec's texts joined by spaces, after a prefix of its own (the
 * suite's description): a name is matched from a word's start to the end. Runs of spaces count as one.
 */
export function exactNamesPattern(names: readonly string[]): string {
  return `(?:^|\\s)(?:${names.map(specTextPattern).join('|')})$`;
}
