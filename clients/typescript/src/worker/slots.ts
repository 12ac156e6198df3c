/**
 * {@link Slots}: the Worker's concurrency limit, a counting semaphore whose waits can be abandoned
 * when the Worker shuts down.
 */
export class Slots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Free slots right now. */
  get free(): number {
    return this.#free;
  }

  /** Takes a slot; resolves false (holding nothing) if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = () => {
        signal?.removeEventListener("abort", abandon);
        resolve(true);
      };
      const abandon = () => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        resolve(false);
      };
      this.#waiting.push(grant);
      signal?.addEventListener("abort", abandon, { once: true });
    });
  }

  /** Gives a slot back, to the longest waiter if there is one; false when a waiter took it. */
  release(): boolean {
    const next = this.#waiting.shift();
    if (next) {
      next();
      return false;
    }
    this.#free++;
    return true;
  }
}

/** Sleeps `ms`, waking early when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
