// A bearer token kept in a file (a mounted Secret): checked at start (it
// exists, holds at least MIN_TOKEN_LENGTH characters, and is not readable
// by every user), then read anew when the file changes, at most once per
// recheck interval, so a rotated Secret takes effect without a restart. A
// re-read that fails (the kubelet swapping the files, an empty write) keeps
// the last good token. The token is never logged.
import { readFileSync, statSync } from 'node:fs';

export const MIN_TOKEN_LENGTH = 16;

export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

/** The token in `path`, checked; throws TokenFileError with a line a person can act on. */
export function readTokenFile(path: string): string {
  let text: string;
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TokenFileError(
      `${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  if (mode & 0o004)
    throw new TokenFileError(
      `${path}: is readable by every user (mode 0${mode.toString(8)}); make it 0600 or 0640 (a Secret volume's defaultMode)`,
    );
  const token = text.trim();
  if (token === '') throw new TokenFileError(`${path}: is empty`);
  if (token.length < MIN_TOKEN_LENGTH)
    throw new TokenFileError(
      `${path}: the token has ${token.length} characters, at least ${MIN_TOKEN_LENGTH} are needed`,
    );
  return token;
}

export interface TokenFileOptions {
  /** Monotonic ms. */
  now?: () => number;
  /** How often the file's mtime is looked at; default 1000 ms. */
  recheckMs?: number;
}

export class TokenFile {
  private token: string;
  private mtimeMs: number;
  private checkedAt: number;
  private readonly now: () => number;
  private readonly recheckMs: number;

  readonly path: string;

  constructor(path: string, opts: TokenFileOptions = {}) {
    this.path = path;
    this.now = opts.now ?? (() => performance.now());
    this.recheckMs = opts.recheckMs ?? 1000;
    this.token = readTokenFile(path);
    this.mtimeMs = statSync(path).mtimeMs;
    this.checkedAt = this.now();
  }

  current(): string {
    const now = this.now();
    if (now - this.checkedAt < this.recheckMs) return this.token;
    this.checkedAt = now;
    try {
      const mtimeMs = statSync(this.path).mtimeMs;
      if (mtimeMs !== this.mtimeMs) {
        this.token = readTokenFile(this.path);
        this.mtimeMs = mtimeMs;
      }
    } catch {
      // Keep the last good token.
    }
    return this.token;
  }
}
