/** What a subscriber is handed: the next event, or the end of its subscription with why. */
export interface Subscriber<E> {
  /** Called in publish order; answers false while the subscriber cannot take more for now. */
  deliver(event: E): boolean;
  /** The backlog outgrew its bound: the subscription is over. */
  overflowed(backlog: number): void;
}

interface Subscription<E> {
  subscriber: Subscriber<E>;
  backlog: E[];
  /** The last delivery was refused: queue until resume(). */
  paused: boolean;
}

/**
 * Fans events out to any number of subscribers, each in publish order. A subscriber that stops
 * taking them (a client that does not read) gets a backlog of at most `maxBacklog` events; past
 * that its subscription ends, so it never blocks the publisher or another subscriber and memory
 * stays bounded. Nothing is kept for subscribers that come later.
 */
export class EventBus<E> {
  private readonly subscriptions = new Set<Subscription<E>>();

  constructor(private readonly maxBacklog: number) {}

  get subscriberCount(): number {
    return this.subscriptions.size;
  }

  subscribe(subscriber: Subscriber<E>): { resume(): void; unsubscribe(): void } {
    const subscription: Subscription<E> = { subscriber, backlog: [], paused: false };
    this.subscriptions.add(subscription);
    return {
      resume: () => this.drain(subscription),
      unsubscribe: () => void this.subscriptions.delete(subscription),
    };
  }

  publish(event: E): void {
    for (const s of this.subscriptions) {
      if (s.paused) {
        s.backlog.push(event);
        if (s.backlog.length > this.maxBacklog) {
          this.subscriptions.delete(s);
          s.subscriber.overflowed(s.backlog.length);
          s.backlog.length = 0;
        }
      } else if (!s.subscriber.deliver(event)) {
        s.paused = true;
      }
    }
  }

  private drain(s: Subscription<E>): void {
    if (!this.subscriptions.has(s)) return;
    s.paused = false;
    while (s.backlog.length > 0) {
      if (!s.subscriber.deliver(s.backlog.shift()!)) {
        s.paused = true;
        return;
      }
    }
  }
}
