// The figures a simulate run ends with, computed from the sampled timeline of
// demand and allocated IPs. Pure: the same timeline gives the same summary.

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
}

export interface Totals {
  nncWrites: number;
  reconciles: number;
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
  };
}
