// Exponential backoff with jitter for failed reconciles, honouring a server's
// Retry-After. Pure: the random source is injected.

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** Fraction of the delay randomised either way: 0.2 gives ±20 %. */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 1_000,
  maxMs: 60_000,
  factor: 2,
  jitter: 0.2,
};

/** Longest Retry-After honoured, so a broken header cannot park the node. */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

function positive(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}

/** Fills in defaults; nonsense values (negative, NaN) fall back to them. */
export function normaliseBackoff(partial: Partial<BackoffOptions> = {}): BackoffOptions {
  const initialMs = positive(partial.initialMs, DEFAULT_BACKOFF.initialMs);
  const maxMs = Math.max(initialMs, positive(partial.maxMs, DEFAULT_BACKOFF.maxMs));
  const factor = Math.max(1, positive(partial.factor, DEFAULT_BACKOFF.factor));
  const jitterIn = partial.jitter;
  const jitter =
    typeof jitterIn === 'number' && Number.isFinite(jitterIn)
      ? Math.min(Math.max(jitterIn, 0), 1)
      : DEFAULT_BACKOFF.jitter;
  return { initialMs, maxMs, factor, jitter };
}

/**
 * Delay before retry number `attempt` (1 = after the first failure):
 * `min(max, initial × factor^(attempt−1))`, scaled by a random factor in
 * [1 − jitter, 1 + jitter), at least 1 ms, and never shorter than the
 * server's Retry-After.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number,
  retryAfterSeconds?: number,
): number {
  const n = Number.isFinite(attempt) ? Math.max(1, Math.floor(attempt)) : 1;
  const base = Math.min(options.maxMs, options.initialMs * options.factor ** (n - 1));
  const r = random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0.5;
  const jittered = Math.max(1, Math.round(base * (1 - options.jitter + 2 * options.jitter * unit)));
  if (
    typeof retryAfterSeconds === 'number' &&
    Number.isFinite(retryAfterSeconds) &&
    retryAfterSeconds > 0
  ) {
    return Math.max(jittered, Math.min(Math.ceil(retryAfterSeconds * 1000), MAX_RETRY_AFTER_MS));
  }
  return jittered;
}
