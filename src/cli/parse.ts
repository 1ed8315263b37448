// Flag value parsers for commander: each turns a bad value into a one-line
// error naming the flag.
import { InvalidArgumentError } from 'commander';
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
