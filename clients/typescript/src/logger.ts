/**
 * Logging: the {@link Logger} interface the client and the Worker write diagnostics to. The library
 * is silent unless a logger is passed; `console` fits the interface, and so does a thin adapter
 * around pino or winston.
 */

/** Structured fields attached to a log message. */
export type LogMeta = Record<string, unknown>;

/** Where the client and the Worker send their diagnostics. `warn` and `error` are required. */
export interface Logger {
  warn(message: string, meta?: LogMeta): void;
  error(message: string, meta?: LogMeta): void;
  info?(message: string, meta?: LogMeta): void;
  debug?(message: string, meta?: LogMeta): void;
}

/** The default: drops everything. */
export const silentLogger: Logger = {
  warn() {},
  error() {},
};
