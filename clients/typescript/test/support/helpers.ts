/** Small helpers shared by the integration suites. */
import { randomUUID } from "node:crypto";
import type { Logger, LogMeta } from "../../src/logger.js";

/** A queue name no other test uses. */
export function freshQueue(prefix = "q"): string {
  return `${prefix}-${randomUUID()}`;
}

/** A logger that keeps what it is told, and lets a test wait for a message. */
export class RecordingLogger implements Logger {
  readonly entries: Array<{ level: string; message: string; meta: LogMeta | undefined }> = [];
  readonly #waiters: Array<{ level: string; pattern: RegExp; resolve: () => void }> = [];

  warn(message: string, meta?: LogMeta): void {
    this.#record("warn", message, meta);
  }
  error(message: string, meta?: LogMeta): void {
    this.#record("error", message, meta);
  }
  info(message: string, meta?: LogMeta): void {
    this.#record("info", message, meta);
  }
  debug(message: string, meta?: LogMeta): void {
    this.#record("debug", message, meta);
  }

  /** The messages logged at `level`. */
  messages(level: string): string[] {
    return this.entries.filter((entry) => entry.level === level).map((entry) => entry.message);
  }

  /** Resolves once `count` messages at `level` have matched `pattern` (counting earlier ones). */
  async waitFor(level: string, pattern: RegExp, count = 1): Promise<void> {
    const matches = () =>
      this.entries.filter((entry) => entry.level === level && pattern.test(entry.message)).length;
    while (matches() < count) {
      await new Promise<void>((resolve) => this.#waiters.push({ level, pattern, resolve }));
    }
  }

  #record(level: string, message: string, meta: LogMeta | undefined): void {
    this.entries.push({ level, message, meta });
    for (const waiter of this.#waiters.splice(0)) {
      if (waiter.level === level && waiter.pattern.test(message)) waiter.resolve();
      else this.#waiters.push(waiter);
    }
  }
}

/** A promise with its resolver, for handlers that wait on a test's signal. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** `promise`, or a rejection naming `what` if it has not settled within 20 s. */
export async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for: ${what}`)), 20_000);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
