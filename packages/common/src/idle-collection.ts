import { getHeapStatistics } from 'node:v8';
import type { Logger } from './logger.js';

/**
 * One full garbage collection when a daemon goes quiet after a burst of work.
 *
 * V8 collects its old generation only under allocation pressure: while a daemon is busy, or when
 * the external memory it was told about (Buffers' backing stores) has grown by tens of MiB. A
 * daemon that goes quiet allocates next to nothing, so whatever died during the burst stays: after
 * 50 pulls image-svc held ~31 MiB of dead Buffers and stream-svc ~8 MiB after 200 exec sessions,
 * still there a minute later (bench/README.md, "Memory after a burst"). So every few seconds the
 * daemon compares V8's figures (a cheap call, no allocation to speak of) and collects once, when
 * the heap and external memory have grown well past what the last collection left and nothing
 * moved since the previous look (and a few times more while that collection gave little back). A
 * daemon that stays idle, or stays busy, is never collected by it.
 */

export interface HeapFigures {
  /** V8's committed heap (total_heap_size). */
  total: number;
  /** Live and not yet collected objects (used_heap_size). */
  used: number;
  /** Memory outside the heap that objects hold (external_memory: Buffers and the like). */
  external: number;
}

export interface IdleCollectionPolicy {
  /** Less change than this between two looks (in used heap and external memory) is quiet. */
  quietBytes: number;
  /** Growth of the committed heap plus external memory since the last collection worth collecting. */
  grownBytes: number;
}

export const IDLE_COLLECTION_POLICY: IdleCollectionPolicy = { quietBytes: 1024 * 1024, grownBytes: 4 * 1024 * 1024 };
const LOOK_EVERY_MS = 5000;

/** Whether to collect now: quiet since `previous`, and grown since `afterLastCollection`. */
export function shouldCollect(previous: HeapFigures, now: HeapFigures, afterLastCollection: HeapFigures, policy: IdleCollectionPolicy = IDLE_COLLECTION_POLICY): boolean {
  const moved = Math.abs(now.used - previous.used) + Math.abs(now.external - previous.external);
  const grown = now.total - afterLastCollection.total + (now.external - afterLastCollection.external);
  return moved < policy.quietBytes && grown >= policy.grownBytes;
}

export function heapFigures(): HeapFigures {
  const s = getHeapStatistics();
  return { total: s.total_heap_size, used: s.used_heap_size, external: s.external_memory };
}

/**
 * When to collect, look by look. What a burst leaves may still be held for a while after it (a
 * session's state until its connection's close has run its course): a collection that gives back
 * less than `grownBytes` is tried again after 2, 4, 8 and 16 more quiet looks, and after that the
 * daemon's size is taken as its new normal until it grows again.
 */
export class IdleCollectionSchedule {
  private afterLast: HeapFigures;
  private previous: HeapFigures;
  private retries = 0;
  private wait = 0;

  constructor(start: HeapFigures, private readonly policy: IdleCollectionPolicy = IDLE_COLLECTION_POLICY) {
    this.afterLast = start;
    this.previous = start;
  }

  /** Whether to collect now, given the figures of this look. */
  look(now: HeapFigures): boolean {
    const due = shouldCollect(this.previous, now, this.afterLast, this.policy);
    this.previous = now;
    if (!due) return false;
    if (this.wait > 0) {
      this.wait--;
      return false;
    }
    return true;
  }

  /** The figures before and right after a collection this schedule asked for. */
  collected(before: HeapFigures, after: HeapFigures): void {
    this.previous = after;
    const freed = before.total + before.external - (after.total + after.external);
    if (freed >= this.policy.grownBytes || this.retries >= MAX_RETRIES) {
      this.afterLast = after;
      this.retries = 0;
      this.wait = 0;
      return;
    }
    this.retries++;
    this.wait = 2 ** this.retries - 1;
  }
}

const MAX_RETRIES = 4;

/**
 * Starts looking (an unref'd timer) when the process runs with --expose-gc, which the daemons'
 * node options give; otherwise does nothing. Answers a function that stops it.
 */
export function collectGarbageWhenQuiet(log: Logger): () => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') {
    log.debug('no idle garbage collection: node runs without --expose-gc');
    return () => undefined;
  }
  const schedule = new IdleCollectionSchedule(heapFigures());
  const timer = setInterval(() => {
    const before = heapFigures();
    if (!schedule.look(before)) return;
    gc();
    const after = heapFigures();
    schedule.collected(before, after);
    log.debug({ before, after }, 'quiet after a burst: collected garbage');
  }, LOOK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
