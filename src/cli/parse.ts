// Flag value parsers for commander: each turns a bad value into a one-line
// error naming the flag.
import { InvalidArgumentError, type Command } from 'commander';
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function integerOption(flag: string, min = 0): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min) {
      throw new InvalidArgumentError(`${flag} must be an integer >= ${min}, got "${value}"`);
    }
    return n;
  };
}

export function numberOption(flag: string, min = -Infinity): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min) {
      throw new InvalidArgumentError(
        `${flag} must be a number${Number.isFinite(min) ? ` >= ${min}` : ''}, got "${value}"`,
      );
    }
    return n;
  };
}

/** `true` or `false` (as kube components spell booleans: --leader-elect=false). */
export function booleanOption(flag: string): (value: string) => boolean {
  return (value) => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    throw new InvalidArgumentError(`${flag} must be true or false, got "${value}"`);
  };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };

/** A duration as Kubernetes flags write them: "15s", "500ms", "1m", "1.5s"; a bare number is seconds. */
export function durationOption(flag: string): (value: string) => number {
  return (value) => {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
    const ms = m ? Number(m[1]) * UNIT_MS[m[2] ?? 's']! : NaN;
    if (!m || !(ms > 0)) {
      throw new InvalidArgumentError(
        `${flag} must be a positive duration such as 15s or 500ms, got "${value}"`,
      );
    }
    return Math.round(ms);
  };
}

/** A file that can be created or written: its directory exists and is writable. */
export function writableFileOption(flag: string): (value: string) => string {
  return (value) => {
    if (value.trim() === '') throw new InvalidArgumentError(`${flag} must not be empty`);
    const dir = dirname(resolve(value));
    try {
      if (!statSync(dir).isDirectory()) throw new Error('not a directory');
      accessSync(dir, constants.W_OK);
    } catch {
      throw new InvalidArgumentError(`${flag}: directory ${dir} does not exist or is not writable`);
    }
    return value;
  };
}

/**
 * One default format in every --help: `(default: VALUE)`, unquoted, whatever
 * the value's type (commander quotes strings: `(default: "kube-system")`).
 * Applied to a command and its sub-commands.
 */
export function plainDefaults(command: Command): Command {
  for (const option of command.options) {
    if (typeof option.defaultValue === 'string' && option.defaultValueDescription === undefined) {
      option.defaultValueDescription = option.defaultValue;
    }
  }
  for (const sub of command.commands) plainDefaults(sub);
  return command;
}

/**
 * Commander's error text as the project's one line: `pool-monitor: MESSAGE`,
 * the flag first. "error: option '--batch <n>' argument '0' is invalid.
 * --batch must be ..." becomes "pool-monitor: --batch must be ...", and a
 * message that does not name its flag gets it: `--port "x": must be ...`.
 */
export function errorLine(text: string): string {
  const body = text.replace(/^error: /, '').trimEnd();
  const invalid = /^option '(--[\w-]+)[^']*' argument '([^']*)' is invalid\. (.*)$/s.exec(body);
  if (!invalid) return `pool-monitor: ${body}\n`;
  const [, flag, value, message] = invalid as unknown as [string, string, string, string];
  return message.startsWith(flag)
    ? `pool-monitor: ${message}\n`
    : `pool-monitor: ${flag} "${value}": ${message}\n`;
}
