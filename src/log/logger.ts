// Structured JSON-lines logging through winston, as docs/design/contracts.md#logs fixes it:
// every line carries `level`, `ts` (ISO 8601), `msg`, `component`, then the
// event's own fields, in that order, on one line.
import winston from 'winston';
import type Transport from 'winston-transport';

import type { LogLevel } from './levels.ts';

export { LOG_LEVELS, type LogLevel } from './levels.ts';

/** The logger every component receives: winston's, narrowed to what we use. */
export type Logger = winston.Logger;

const RESERVED = new Set(['level', 'message', 'ts', 'msg', 'component']);

/** Formats one record as a single JSON line with the fixed keys first. */
export const jsonLine = winston.format.printf((info) => {
  const { level, message, component, ts } = info as Record<string, unknown>;
  const ordered: Record<string, unknown> = {
    level,
    ts: ts ?? new Date().toISOString(),
    msg: message,
    component: component ?? 'main',
  };
  for (const [key, value] of Object.entries(info)) {
    if (!RESERVED.has(key)) ordered[key] = value instanceof Error ? value.message : value;
  }
  return JSON.stringify(ordered);
});

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; stdout when absent. Tests pass a capturing transport. */
  transports?: Transport[];
  /** Clock for `ts`; injected so tests and virtual-time runs are deterministic. */
  now?: () => Date;
}

/** Builds the root logger. Give each component its own `child({ component })`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const now = options.now ?? (() => new Date());
  const logger = winston.createLogger({
    level: options.level ?? 'info',
    format: winston.format.combine(
      winston.format((info) => {
        (info as Record<string, unknown>).ts = now().toISOString();
        return info;
      })(),
      jsonLine,
    ),
    transports: options.transports ?? [new winston.transports.Console()],
  });
  // A line logged after end() (a late callback during shutdown) must not crash
  // the process with "write after end": it is dropped instead.
  logger.on('error', () => {});
  return dropEarly(logger);
}

/**
 * winston formats every line (here: a timestamp and a JSON.stringify) and
 * runs it through its streams before a transport drops it for its level.
 * A line no transport takes (or any line of a silent logger) is dropped here
 * instead, at the call: a sidecar at warn logs its debug and info lines at
 * the cost of a level check. Child loggers inherit these methods and are
 * asked with their own level.
 */
function dropEarly(logger: Logger): Logger {
  for (const level of Object.keys(logger.levels)) {
    const write = (logger as unknown as Record<string, (...args: unknown[]) => Logger>)[level];
    if (typeof write !== 'function') continue;
    Object.defineProperty(logger, level, {
      configurable: true,
      writable: true,
      value(this: Logger, ...args: unknown[]): Logger {
        return !this.silent && this.isLevelEnabled(level) ? write.apply(this, args) : this;
      },
    });
  }
  return logger;
}

/** A logger that drops everything, for code paths that log nothing of interest. */
export function silentLogger(): Logger {
  return dropEarly(
    winston.createLogger({ silent: true, transports: [new winston.transports.Console()] }),
  );
}
