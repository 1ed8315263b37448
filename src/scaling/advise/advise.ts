// Tuning advice: which batch size and release policy would have cut NNC writes
// most on a recorded demand history, within an idle-IP budget, without making
// pods wait longer. Pure: the caller says how a candidate is evaluated (the
// fast pool model on a node, the real simulation in `simulate --advise`).
import { autoPolicy } from '../policies/auto/auto.ts';
import { fixedDelayPolicy } from '../policies/fixed-delay.ts';
import type { AnyPolicy } from '../policies/policy.ts';

export interface Candidate {
  batch: number;
  /** `cns-v2`, `delay-60s`, `auto`. */
  policy: string;
  /** The flag that selects it. */
  releaseDelay: string;
}

export interface Figures {
  nncWrites: number;
  ipsAllocated: number;
  ipsReleased: number;
  idleIpSeconds: number;
  podWaitP99Seconds: number;
}

export interface Evaluated extends Candidate, Figures {
  /** Within the idle budget and the pod-wait allowance. */
  fits: boolean;
}

export interface Advice {
  /** What the history is: a trace name or `node history`. */
  source: string;
  seconds: number;
  /** CNS v2 at the current batch: the yardstick. */
  current: Evaluated;
  budget: { idleRatio: number; idleIpSeconds: number; podWaitP99Seconds: number };
  best: Evaluated;
  /** Every candidate, best first. */
  candidates: Evaluated[];
  /** One sentence with the figures that justify it. */
  summary: string;
}

/** Batches around the current one and the common ones, within [1, max]. */
export function candidateBatches(batch: number, max: number): number[] {
  const set = new Set([Math.floor(batch / 2), batch, batch * 2, 8, 16, 32]);
  return [...set].filter((b) => b >= 1 && b <= max).sort((a, b) => a - b);
}

export const ADVISED_POLICIES: readonly {
  policy: string;
  releaseDelay: string;
  make: () => AnyPolicy;
}[] = [
  { policy: 'cns-v2', releaseDelay: '0', make: () => fixedDelayPolicy(0) },
  { policy: 'delay-60s', releaseDelay: '60', make: () => fixedDelayPolicy(60_000) },
  { policy: 'auto', releaseDelay: 'auto', make: () => autoPolicy() },
];

export function candidates(batch: number, max: number): Candidate[] {
  return candidateBatches(batch, max).flatMap((b) =>
    ADVISED_POLICIES.map((p) => ({ batch: b, policy: p.policy, releaseDelay: p.releaseDelay })),
  );
}

/** Pod wait may grow by at most this much over CNS v2 (the goal table allows +0.5 s). */
export const WAIT_ALLOWANCE_SECONDS = 0.5;

/** Ranks evaluated candidates: the ones that fit first, fewest writes, then least churn, then least idle. */
export function rank(
  current: Figures,
  all: readonly (Candidate & Figures)[],
  idleRatio: number,
): Evaluated[] {
  const idleBudget = current.idleIpSeconds * idleRatio;
  const waitBudget = current.podWaitP99Seconds + WAIT_ALLOWANCE_SECONDS;
  return all
    .map((c) => ({
      ...c,
      fits: c.idleIpSeconds <= idleBudget && c.podWaitP99Seconds <= waitBudget,
    }))
    .sort(
      (a, b) =>
        Number(b.fits) - Number(a.fits) ||
        a.nncWrites - b.nncWrites ||
        a.ipsAllocated + a.ipsReleased - (b.ipsAllocated + b.ipsReleased) ||
        a.idleIpSeconds - b.idleIpSeconds,
    );
}

export function buildAdvice(
  source: string,
  seconds: number,
  currentBatch: number,
  evaluated: readonly (Candidate & Figures)[],
  idleRatio: number,
): Advice {
  const base =
    evaluated.find((c) => c.batch === currentBatch && c.policy === 'cns-v2') ?? evaluated[0];
  if (base === undefined) throw new Error('no candidate evaluated');
  const ranked = rank(base, evaluated, idleRatio);
  const best = ranked[0] as Evaluated;
  const current = ranked.find(
    (c) => c === base || (c.batch === base.batch && c.policy === base.policy),
  ) as Evaluated;
  const pct = (a: number, b: number): string =>
    b === 0 ? '0 %' : `${Math.round(((b - a) / b) * 100)} %`;
  const summary =
    best.batch === current.batch && best.policy === current.policy
      ? `keep batch ${current.batch} and --release-delay 0: nothing cut NNC writes within ${idleRatio}x its idle IPs`
      : `batch ${best.batch} with --release-delay ${best.releaseDelay} would have made ${best.nncWrites} NNC writes ` +
        `instead of ${current.nncWrites} (${pct(best.nncWrites, current.nncWrites)} fewer) and churned ` +
        `${best.ipsAllocated + best.ipsReleased} IPs instead of ${current.ipsAllocated + current.ipsReleased}, ` +
        `for ${best.idleIpSeconds} idle IP-seconds (${(best.idleIpSeconds / Math.max(1, current.idleIpSeconds)).toFixed(2)}x, ` +
        `budget ${idleRatio}x) and pod wait p99 ${best.podWaitP99Seconds} s (now ${current.podWaitP99Seconds} s)`;
  return {
    source,
    seconds,
    current,
    budget: {
      idleRatio,
      idleIpSeconds: Math.round(current.idleIpSeconds * idleRatio),
      podWaitP99Seconds: current.podWaitP99Seconds + WAIT_ALLOWANCE_SECONDS,
    },
    best,
    candidates: ranked,
    summary,
  };
}
