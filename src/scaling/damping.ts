// Opt-in scale-down damping (`--release-delay`). A higher target is applied
// at once; a lower one only when it has held for the whole delay. Precisely:
// the target applied is the highest target seen during the last `delayMs`
// (a sliding maximum), so a brief dip in demand never releases IPs that the
// next spike would need again. With delay 0 this is the identity.

export interface TargetSample {
  /** Time (ms, scheduler clock) from which `target` was the computed target. */
  at: number;
  target: number;
}

/**
 * Records the target computed at `now`, returning the new history: samples
 * that no longer matter for a window of `delayMs` are dropped, so the
 * history stays small however long the monitor runs.
 */
export function recordTarget(
  history: readonly TargetSample[],
  now: number,
  target: number,
  delayMs: number,
): TargetSample[] {
  const last = history[history.length - 1];
  const next =
    last !== undefined && last.target === target ? [...history] : [...history, { at: now, target }];
  return prune(next, now, delayMs);
}

/** Drops samples that ended before the window [now - delayMs, now] began. */
function prune(history: TargetSample[], now: number, delayMs: number): TargetSample[] {
  const windowStart = now - delayMs;
  let first = 0;
  // Keep the last sample at or before the window start: it was in effect then.
  while (first + 1 < history.length && (history[first + 1] as TargetSample).at <= windowStart) {
    first += 1;
  }
  return history.slice(first);
}

export interface DampedTarget {
  /** What to apply now. */
  target: number;
  /** True when a lower target is being held back. */
  deferred: boolean;
  /** When deferred: the time at which the decision may change. */
  recheckAt?: number;
}

/**
 * The target to apply at `now` given the request currently written. Without
 * a full window of history (just started) a lower target is deferred too.
 */
export function dampedTarget(
  history: readonly TargetSample[],
  now: number,
  request: number,
  delayMs: number,
): DampedTarget {
  const current = history[history.length - 1];
  if (current === undefined) return { target: request, deferred: false };
  if (delayMs <= 0 || current.target >= request) return { target: current.target, deferred: false };
  const windowStart = now - delayMs;
  const first = history[0] as TargetSample;
  let highest = Number.NEGATIVE_INFINITY;
  for (const sample of history) {
    if (sample.at <= windowStart) highest = sample.target;
    else highest = Math.max(highest, sample.target);
  }
  if (first.at > windowStart) {
    // Not observed for a whole window yet: hold until it has been.
    return { target: request, deferred: true, recheckAt: first.at + delayMs };
  }
  if (highest < request) {
    return {
      target: highest,
      deferred: highest > current.target,
      ...recheck(history, windowStart, delayMs, highest > current.target),
    };
  }
  return { target: request, deferred: true, ...recheck(history, windowStart, delayMs, true) };
}

/**
 * When the current (lowest) target will have held for the whole window: the
 * start of the run of samples at or below it, plus the delay.
 */
function recheck(
  history: readonly TargetSample[],
  _windowStart: number,
  delayMs: number,
  needed: boolean,
): { recheckAt?: number } {
  if (!needed) return {};
  const current = history[history.length - 1] as TargetSample;
  let lastHigher = -1;
  history.forEach((s, i) => {
    if (s.target > current.target) lastHigher = i;
  });
  const from = history[lastHigher + 1];
  return from === undefined ? {} : { recheckAt: from.at + delayMs };
}
