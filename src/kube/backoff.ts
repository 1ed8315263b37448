// Exponential backoff with jitter, shared by every retry loop that talks to
// the API server: informer restarts, status writes, CSS publication. Pure
// delay math plus a tiny stateful helper; randomness is injected so tests are
// deterministic.

export interface BackoffOptions {
  /** First delay, in ms. */
  initialMs: number;
  /** Upper bound for any delay, in ms. */
  maxMs: number;
  /** Growth per attempt; 2 doubles. */
  factor?: number;
  /** Fraction of the delay that is randomised: 0.2 means ±20 %. */
  jitter?: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 500,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.2,
};

/**
 * Delay before retry number `attempt` (0 for the first retry):
 * `min(max, initial × factor^attempt)`, then spread by ±jitter and clamped
 * to [0, max]. `random` returns a number in [0, 1).
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const factor = options.factor ?? 2;
  const jitter = options.jitter ?? 0.2;
  const exp = Math.min(options.maxMs, options.initialMs * factor ** Math.max(0, attempt));
  const spread = exp * jitter * (random() * 2 - 1);
  return Math.round(Math.min(options.maxMs, Math.max(0, exp + spread)));
}

/** Counts consecutive failures and hands out the next delay; reset on success. */
export class Backoff {
  private attempt = 0;
  private readonly options: BackoffOptions;
  private readonly random: () => number;

  constructor(options: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random) {
    this.options = options;
    this.random = random;
  }

  /** The delay to wait now; each call grows the next one. */
  next(): number {
    return backoffDelay(this.attempt++, this.options, this.random);
  }

  /** Number of failures since the last reset. */
  get failures(): number {
    return this.attempt;
  }

  reset(): void {
    this.attempt = 0;
  }
}

/**
 * The delay to wait after a failed API call: the server's Retry-After when it
 * gave one (429/503), never less than the backoff's own delay.
 */
export function retryDelay(backoffMs: number, retryAfterSeconds: number | undefined): number {
  if (retryAfterSeconds === undefined || !(retryAfterSeconds > 0)) return backoffMs;
  return Math.max(backoffMs, retryAfterSeconds * 1000);
}
