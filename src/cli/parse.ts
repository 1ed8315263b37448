// Flag value parsers for commander: each turns a bad value into a one-line
// error naming the flag.
import { InvalidArgumentError } from 'commander';

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
