// The figures a simulate run ends with, computed from the sampled timeline of
// demand and allocated IPs and from each pod's wait for its IP. Pure: the
// same timeline and waits give the same summary.
import { percentile } from './report/stats.ts';

export interface Sample {
  /** Seconds from the start. */
  t: number;
  demand: number;
  requested: number;
  /** IPs the node actually holds (NNC status). */
  allocated: number;
  /** Pods waiting for an IP; when absent, demand beyond the allocated IPs. */
  waiting?: number;
}

export interface SimulationSummary {
  scenario: string;
  simulatedSeconds: number;
  nncWrites: number;
  reconciles: number;
  ipsAllocated: number;
  ipsReleased: number;
  peakPool: number;
  peakDemand: number;
  /** Integral of max(0, allocated − demand) over time. */
  idleIpSeconds: number;
  /** Time during which pods waited for an IP. */
  secondsUnderProvisioned: number;
  /** Pods that got an IP. */
  pods: number;
  /** Pod wait from creation to the CNI request that got its IP: median, 99th percentile, worst. */
  podWaitP50Seconds: number;
  podWaitP99Seconds: number;
  podWaitMaxSeconds: number;
  /** Pods whose first CNI request was refused for want of a free IP. */
  podIpRefusals: number;
}

export interface Totals {
  nncWrites: number;
  reconciles: number;
  /** Each pod's wait for its IP, in seconds. */
  podWaitsSeconds?: readonly number[];
  podIpRefusals?: number;
}

/** Seconds, to the millisecond. */
function seconds(value: number | undefined): number {
  return value === undefined ? 0 : Math.round(value * 1000) / 1000;
}

/** Integrates the step-function timeline `samples` (each value holds until the next sample). */
export function summarize(
  scenario: string,
  samples: readonly Sample[],
  endSeconds: number,
  totals: Totals,
): SimulationSummary {
  let ipsAllocated = 0;
  let ipsReleased = 0;
  let peakPool = 0;
  let peakDemand = 0;
  let idle = 0;
  let under = 0;
  const waits = totals.podWaitsSeconds ?? [];
  samples.forEach((s, i) => {
    const prev = samples[i - 1];
    if (prev) {
      const change = s.allocated - prev.allocated;
      if (change > 0) ipsAllocated += change;
      else ipsReleased -= change;
    } else {
      ipsAllocated += s.allocated;
    }
    peakPool = Math.max(peakPool, s.allocated);
    peakDemand = Math.max(peakDemand, s.demand);
    const next = samples[i + 1];
    const span = Math.max(0, Math.min(next ? next.t : endSeconds, endSeconds) - s.t);
    idle += Math.max(0, s.allocated - s.demand) * span;
    if ((s.waiting ?? Math.max(0, s.demand - s.allocated)) > 0) under += span;
  });
  return {
    scenario,
    simulatedSeconds: endSeconds,
    nncWrites: totals.nncWrites,
    reconciles: totals.reconciles,
    ipsAllocated,
    ipsReleased,
    peakPool,
    peakDemand,
    idleIpSeconds: Math.round(idle),
    secondsUnderProvisioned: Math.round(under * 1000) / 1000,
    pods: waits.length,
    podWaitP50Seconds: seconds(percentile(waits, 50)),
    podWaitP99Seconds: seconds(percentile(waits, 99)),
    podWaitMaxSeconds: seconds(percentile(waits, 100)),
    podIpRefusals: totals.podIpRefusals ?? 0,
  };
}

/**
 * Idle IP-seconds so far as a step function's integral: flat pairs
 * [t, idle so far at t, ...] at the start, wherever the idle rate changes
 * and at the end. Between two pairs it grows linearly, so the pairs are
 * enough to know it at every moment (frontier.ts `peakIdleRatio`).
 */
export function idleSoFar(samples: readonly Sample[], endSeconds: number): number[] {
  const out: number[] = [];
  let idle = 0;
  let rate: number | undefined;
  samples.forEach((s, i) => {
    if (s.t >= endSeconds) return;
    const r = Math.max(0, s.allocated - s.demand);
    if (r !== rate) out.push(s.t, idle);
    rate = r;
    idle += r * (Math.min(samples[i + 1]?.t ?? endSeconds, endSeconds) - s.t);
  });
  if (out.length > 0) out.push(endSeconds, idle);
  return out;
}
