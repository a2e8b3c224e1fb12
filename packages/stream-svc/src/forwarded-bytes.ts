/** Port-forward bytes, both ways, for the daemon's metrics; set once at start-up. */
export type ForwardedBytesObserver = (direction: 'to_pod' | 'from_pod', bytes: number) => void;

let observer: ForwardedBytesObserver = () => undefined;

export function observeForwardedBytes(next: ForwardedBytesObserver): void {
  observer = next;
}

export function countForwarded(direction: 'to_pod' | 'from_pod', bytes: number): void {
  observer(direction, bytes);
}
