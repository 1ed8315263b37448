// When will a subnet run out? The fulfiller samples each subnet's free count
// (whenever it changes, and on every /metrics scrape) and forecasts the time
// to exhaustion at the recent net allocation rate: the free addresses lost
// over a sliding window (10 min by default) divided by the time it spans.
// Allocations and releases both count, so a subnet whose nodes only churn has
// a rate of 0. When the net rate is not positive (free addresses steady or
// growing) the forecast is +Inf: the subnet is not filling up. With less than
// a minute of history there is no forecast at all (undefined: the gauge is
// absent for that subnet), so a fresh process does not extrapolate noise.
//
// Pure and clock-free: time comes in as `now` (ms). Memory is bounded: at most
// one sample per `resolutionMs` in the window, plus the one just before it.

export interface FreeSample {
  /** ms */
  at: number;
  free: number;
}

export interface ForecastOptions {
  /** Sliding window for the allocation rate, ms (default 10 min). */
  windowMs?: number;
  /** Less history than this: no forecast, ms (default 60 s). */
  minSpanMs?: number;
  /** Samples closer than this replace each other, ms (default 1 s). */
  resolutionMs?: number;
}

export const DEFAULT_FORECAST_WINDOW_MS = 10 * 60_000;
const DEFAULT_MIN_SPAN_MS = 60_000;
const DEFAULT_RESOLUTION_MS = 1000;

/** The free count at `t` from samples sorted by time (step function; undefined before the first). */
function freeAt(samples: readonly FreeSample[], t: number): number | undefined {
  let value: number | undefined;
  for (const s of samples) {
    if (s.at > t) break;
    value = s.free;
  }
  return value;
}

/**
 * Seconds until the subnet has no free address, at the net allocation rate
 * over the window ending `now`: +Inf when the rate is not positive, 0 when
 * nothing is free, undefined with less than `minSpanMs` of history.
 * `samples` are sorted by time; the last one is the free count now.
 */
export function exhaustionForecastSeconds(
  samples: readonly FreeSample[],
  now: number,
  options: ForecastOptions = {},
): number | undefined {
  const windowMs = options.windowMs ?? DEFAULT_FORECAST_WINDOW_MS;
  const minSpanMs = options.minSpanMs ?? DEFAULT_MIN_SPAN_MS;
  const last = samples[samples.length - 1];
  const first = samples[0];
  if (last === undefined || first === undefined) return undefined;
  const start = Math.max(now - windowMs, first.at);
  const span = now - start;
  if (span < minSpanMs) return undefined;
  const freeNow = last.free;
  if (freeNow <= 0) return 0;
  const freeThen = freeAt(samples, start)!;
  const ratePerSecond = (freeThen - freeNow) / (span / 1000);
  if (!(ratePerSecond > 0)) return Number.POSITIVE_INFINITY;
  return freeNow / ratePerSecond;
}

/** Per-subnet samples over a sliding window (bounded), and the forecast from them. */
export class ExhaustionForecaster {
  readonly #samples = new Map<string, FreeSample[]>();
  readonly #options: Required<ForecastOptions>;

  constructor(options: ForecastOptions = {}) {
    this.#options = {
      windowMs: options.windowMs ?? DEFAULT_FORECAST_WINDOW_MS,
      minSpanMs: options.minSpanMs ?? DEFAULT_MIN_SPAN_MS,
      resolutionMs: options.resolutionMs ?? DEFAULT_RESOLUTION_MS,
    };
  }

  /** The subnet has `free` addresses at `now` (ms, not earlier than the last sample). */
  record(subnet: string, free: number, now: number): void {
    if (!Number.isFinite(free) || !Number.isFinite(now)) return;
    let list = this.#samples.get(subnet);
    if (!list) this.#samples.set(subnet, (list = []));
    const last = list[list.length - 1];
    if (last && now < last.at) return;
    if (last && last.free === free) {
      // Unchanged: the step function needs no new point, only the span grows.
    } else if (last && now - last.at < this.#options.resolutionMs && list.length > 1) {
      last.free = free;
    } else {
      list.push({ at: now, free });
    }
    // Keep the newest sample at or before the window's start, drop older ones.
    const start = now - this.#options.windowMs;
    let drop = 0;
    while (drop + 1 < list.length && list[drop + 1]!.at <= start) drop++;
    if (drop > 0) list.splice(0, drop);
  }

  /** Seconds to exhaustion for the subnet at `now` (see exhaustionForecastSeconds). */
  forecast(subnet: string, now: number): number | undefined {
    const list = this.#samples.get(subnet);
    return list ? exhaustionForecastSeconds(list, now, this.#options) : undefined;
  }

  /** Samples held for the subnet (bounded by window / resolution + 2). */
  size(subnet: string): number {
    return this.#samples.get(subnet)?.length ?? 0;
  }

  /** Forget subnets no longer listed. */
  keepOnly(subnets: ReadonlySet<string>): void {
    for (const name of this.#samples.keys()) if (!subnets.has(name)) this.#samples.delete(name);
  }
}
