// A token bucket for ARM calls (budget.ts keeps one for reads and one for
// writes): at most `burst` calls at once, then `qps` per second. Pure scheduling math in
// `reserve` (the generic cell rate algorithm: each call is given the time it
// may go, in arrival order), a small class that waits for it. A 429's
// Retry-After pauses the whole bucket: after the pause calls resume one
// interval apart, without a burst, so a throttled subscription is not hit by
// twenty calls at the same instant.
import { monotonicClock, sleepOrAbort, type Clock } from '../../clock/clock.ts';

export interface BucketConfig {
  /** Sustained calls per second. */
  qps: number;
  /** Calls allowed at once after a quiet period. */
  burst: number;
}

export interface BucketState {
  /** Theoretical arrival time of the next call, in ms. */
  tat: number;
}

export const INITIAL_BUCKET: BucketState = { tat: -Infinity };

export function validateBucket(config: BucketConfig, flag = '--azure'): void {
  if (!(config.qps > 0) || !Number.isFinite(config.qps)) {
    throw new Error(`${flag}-qps must be a positive number, got ${config.qps}`);
  }
  if (!Number.isInteger(config.burst) || config.burst < 1) {
    throw new Error(`${flag}-burst must be an integer >= 1, got ${config.burst}`);
  }
}

/**
 * The time (ms) a call arriving at `now` may go, and the state after it.
 * Over any window of length w, at most `burst + w × qps / 1000` calls go.
 */
export function reserve(
  state: BucketState,
  now: number,
  config: BucketConfig,
): { at: number; state: BucketState } {
  const interval = 1000 / config.qps;
  const tolerance = (config.burst - 1) * interval;
  const tat = Math.max(state.tat, now);
  const at = Math.max(now, tat - tolerance);
  return { at, state: { tat: tat + interval } };
}

/** The state after a pause until `until`: the next call goes at `until`, then one per interval. */
export function pauseBucket(state: BucketState, until: number, config: BucketConfig): BucketState {
  const tolerance = (config.burst - 1) * (1000 / config.qps);
  return { tat: Math.max(state.tat, until + tolerance) };
}

/**
 * The bucket's time, on a monotonic line by default (monotonicClock): a step
 * of the wall clock back would hold every call for its length, one forward
 * would let a burst through.
 */
export type BucketClock = Pick<Clock, 'now' | 'sleep'>;

export class TokenBucket {
  readonly config: BucketConfig;
  private state: BucketState = INITIAL_BUCKET;
  private pausedUntil = -Infinity;
  private readonly clock: BucketClock;

  constructor(config: BucketConfig, clock: BucketClock = monotonicClock) {
    validateBucket(config);
    this.config = config;
    this.clock = clock;
  }

  /**
   * Waits until a call may go; resolves to how long it waited (ms). A pause
   * that begins while a call waits for its slot holds that call back too.
   */
  async take(signal?: AbortSignal): Promise<number> {
    let waited = 0;
    for (;;) {
      const now = this.clock.now();
      if (now < this.pausedUntil) {
        await sleepOrAbort(this.clock, this.pausedUntil - now, signal);
        waited += this.pausedUntil - now;
        continue;
      }
      const r = reserve(this.state, now, this.config);
      this.state = r.state;
      const wait = r.at - now;
      if (wait > 0) {
        await sleepOrAbort(this.clock, wait, signal);
        waited += wait;
      }
      if (this.clock.now() >= this.pausedUntil) return waited;
    }
  }

  /** Holds every call back until `ms` from now (a 429's Retry-After). */
  pauseFor(ms: number): void {
    const until = this.clock.now() + ms;
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    this.state = pauseBucket(this.state, until, this.config);
  }
}
