// Exponential backoff with jitter: the one backoff of the project, used by
// every retry loop (informer restarts, NNC spec writes, status writes, CSS
// publication, the simulated kubelet). One attempt convention everywhere:
// attempt 0 is the delay before the first retry. Pure delay math plus a tiny
// stateful helper; randomness is injected so tests are deterministic.

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

/** Longest Retry-After honoured, so a broken header cannot park a loop. */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

function positive(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}

/**
 * Options from untrusted or partial input (flags, test tuning): nonsense
 * values (negative, NaN) fall back to `defaults`; max is at least initial.
 */
export function normaliseBackoff(
  partial: Partial<BackoffOptions> = {},
  defaults: BackoffOptions = DEFAULT_BACKOFF,
): Required<BackoffOptions> {
  const initialMs = positive(partial.initialMs, defaults.initialMs);
  const maxMs = Math.max(initialMs, positive(partial.maxMs, defaults.maxMs));
  const factor = Math.max(1, positive(partial.factor, defaults.factor ?? 2));
  const jitterIn = partial.jitter ?? defaults.jitter ?? 0.2;
  const jitter = Number.isFinite(jitterIn) ? Math.min(Math.max(jitterIn, 0), 1) : 0.2;
  return { initialMs, maxMs, factor, jitter };
}

/**
 * Delay before retry number `attempt` (0 for the first retry):
 * `min(max, initial × factor^attempt)`, then spread by ±jitter and clamped
 * to [0, max]. `random` returns a number in [0, 1); anything else counts as
 * the middle of the range.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const factor = options.factor ?? 2;
  const jitter = options.jitter ?? 0.2;
  const n = Number.isFinite(attempt) ? Math.max(0, Math.floor(attempt)) : 0;
  const exp = Math.min(options.maxMs, options.initialMs * factor ** n);
  const r = random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0.5;
  const spread = exp * jitter * (unit * 2 - 1);
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
 * gave one (429/503; at most MAX_RETRY_AFTER_MS), never less than the
 * backoff's own delay.
 */
export function retryDelay(backoffMs: number, retryAfterSeconds: number | undefined): number {
  if (
    typeof retryAfterSeconds !== 'number' ||
    !Number.isFinite(retryAfterSeconds) ||
    !(retryAfterSeconds > 0)
  ) {
    return backoffMs;
  }
  return Math.max(backoffMs, Math.min(Math.ceil(retryAfterSeconds * 1000), MAX_RETRY_AFTER_MS));
}
