// Keep-alive from an idle-time record, as serverless platforms keep a warm
// instance: a pool level the target no longer needs is a unit of capacity
// that may be needed again. Keeping it costs its IPs for every second it stays
// unused; letting it go costs one release-and-reacquire cycle (NNC writes and
// IP churn). The level's record of past gaps (how long it stayed unused before
// it was needed again) says which costs less. A ski-rental choice, made on the
// gaps as data rather than on a worst case.

export interface KeepAliveChoice {
  /** Keep the level now. */
  keep: boolean;
  /** Past gaps longer than the current one: the evidence the choice rests on. */
  survivors: number;
  /** When kept: the age (ms) at which the evidence changes and the choice must be made again. */
  recheckAge?: number;
}

/**
 * Whether to keep a level unused for `ageMs`, given its past gaps (ms), its
 * size in IPs and the cost of one release cycle in IP-seconds. `unseen`
 * pseudo-gaps longer than any recorded weigh against keeping (the record is a
 * sample: this gap may be unlike it); a recorded gap g stands for gaps up to
 * g * (1 + slack) (the next one may run a little longer).
 *
 * Only gaps longer than the current age are still possible (the survivors).
 * Keeping until age w costs, for each survivor g: the idle IPs until g if
 * g <= w (then it is needed again), else the idle IPs until w plus a cycle.
 * Release at once costs one cycle. Keep when some w does better. No survivor:
 * the level has never stayed unused this long before and was needed again, so
 * nothing argues for keeping it.
 */
export function keepAlive(
  gapsMs: readonly number[],
  ageMs: number,
  ips: number,
  cycleCost: number,
  unseen = 0,
  slack = 0,
): KeepAliveChoice {
  // A gap recorded as g stands for gaps up to g * (1 + slack): the next one may run a little longer.
  const survivors = gapsMs
    .map((g) => g * (1 + slack))
    .filter((g) => g > ageMs)
    .sort((a, b) => a - b);
  const seen = survivors.length;
  if (seen === 0 || ips <= 0) return { keep: false, survivors: seen };
  // `unseen` pseudo-gaps longer than any seen: the chance this gap is unlike the record.
  const n = seen + unseen;
  // cost(w = survivors[k]) = (sum_{i<=k} ips*(g_i - age) + (n-1-k) * (ips*(w - age) + cycle)) / n
  let best = Number.POSITIVE_INFINITY;
  let idleBefore = 0;
  for (let k = 0; k < seen; k += 1) {
    const g = survivors[k] as number;
    idleBefore += (ips * (g - ageMs)) / 1000;
    const cost = idleBefore + (n - 1 - k) * ((ips * (g - ageMs)) / 1000 + cycleCost);
    best = Math.min(best, cost / n);
  }
  const keep = best < cycleCost;
  return keep
    ? { keep, survivors: seen, recheckAge: survivors[0] as number }
    : { keep, survivors: seen };
}

/** The share of still-possible durations (gaps, or busy times) that end within `horizonMs` from now. */
export function reuseWithin(gapsMs: readonly number[], ageMs: number, horizonMs: number): number {
  const survivors = gapsMs.filter((g) => g > ageMs);
  if (survivors.length === 0) return 0;
  return survivors.filter((g) => g - ageMs <= horizonMs).length / survivors.length;
}
