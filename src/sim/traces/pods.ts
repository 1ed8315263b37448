// Demand traces built from pods: each pod holds one IP from its start to its
// end, and demand at any time is the number of pods alive. Used by the
// yardstick and hold-out traces, whose shapes come from how workloads create
// and finish pods rather than from a drawn curve.
import type { TracePoint } from '../trace-types.ts';

export interface PodLife {
  /** Seconds from the start of the trace. */
  start: number;
  /** Seconds; Infinity for a pod that never ends. */
  end: number;
}

/** Rounds to the millisecond, so the points are exact in a CSV and in virtual time. */
export function ms(t: number): number {
  return Math.round(t * 1000) / 1000;
}

/** The step function of pods alive up to `until`: one point per instant at which demand changes. */
export function demandOf(pods: readonly PodLife[], until = Infinity): TracePoint[] {
  const deltas = new Map<number, number>();
  for (const p of pods) {
    const start = ms(p.start);
    deltas.set(start, (deltas.get(start) ?? 0) + 1);
    if (Number.isFinite(p.end)) {
      const end = ms(Math.max(p.end, p.start));
      deltas.set(end, (deltas.get(end) ?? 0) - 1);
    }
  }
  const points: TracePoint[] = [{ t: 0, demand: 0 }];
  let demand = 0;
  for (const t of [...deltas.keys()].filter((t) => t <= until).sort((a, b) => a - b)) {
    demand += deltas.get(t) ?? 0;
    const last = points[points.length - 1] as TracePoint;
    if (last.t === t) last.demand = demand;
    else if (last.demand !== demand) points.push({ t, demand });
  }
  return points;
}

/** An exponentially distributed duration with the given mean, from a uniform draw. */
export function exponential(random: () => number, mean: number): number {
  return -Math.log(1 - random()) * mean;
}

/**
 * Pods arriving as a Poisson process whose rate follows `occupancy(t) / meanLife`
 * (so about `occupancy(t)` pods are alive at any time, an M/M/∞ queue that
 * tracks a slowly moving level), each living an exponential time.
 */
export function churningPods(
  random: () => number,
  occupancy: (t: number) => number,
  meanLife: number,
  until: number,
  peakOccupancy: number,
): PodLife[] {
  const pods: PodLife[] = [];
  const maxRate = peakOccupancy / meanLife;
  // Pods alive at the start.
  const initial = Math.round(occupancy(0));
  for (let i = 0; i < initial; i += 1) pods.push({ start: 0, end: exponential(random, meanLife) });
  // Thinning: candidates at the peak rate, kept with probability rate(t) / maxRate.
  for (let t = exponential(random, 1 / maxRate); t < until; t += exponential(random, 1 / maxRate)) {
    if (random() * maxRate < occupancy(t) / meanLife) {
      pods.push({ start: t, end: t + exponential(random, meanLife) });
    }
  }
  return pods;
}
