// `simulate --advise`: the fast pool model ranks every candidate batch size
// and release policy on the trace; the current setting and the best few are
// then run through the product's real path (simulate.ts) and the advice is
// made on those figures.
import type { ScalerSpec } from '../nnc/types.ts';
import {
  ADVISED_POLICIES,
  buildAdvice,
  type Advice,
  type Candidate,
  type Figures,
} from '../scaling/advise/advise.ts';
import { adviseOnHistory } from '../scaling/advise/history.ts';
import { normaliseScaler } from '../scaling/scaler.ts';
import { runSimulation } from './simulate.ts';
import type { Trace } from './trace.ts';

export interface TraceAdviceOptions {
  trace: Trace;
  scaler: ScalerSpec;
  fulfilDelaySeconds: number;
  idleBudget: number;
  /** How many of the model's best candidates are checked in the real simulation (default 3). */
  verify?: number;
  signal?: AbortSignal;
}

export interface TraceAdvice extends Advice {
  /** The model's ranking of every candidate, before the check. */
  modelled: Advice['candidates'];
}

export async function adviseOnTrace(o: TraceAdviceOptions): Promise<TraceAdvice> {
  const scaler = normaliseScaler(o.scaler).scaler;
  const modelled = adviseOnHistory({
    source: o.trace.name,
    points: o.trace.points.map((p) => ({ at: p.t * 1000, demand: p.demand })),
    durationMs: o.trace.durationSeconds * 1000,
    scaler,
    fulfilDelayMs: o.fulfilDelaySeconds * 1000,
    idleRatio: o.idleBudget,
  });
  const current: Candidate = { batch: scaler.batch, policy: 'cns-v2', releaseDelay: '0' };
  const picks: Candidate[] = [current];
  for (const c of modelled.candidates.filter((c) => c.fits)) {
    if (picks.length > (o.verify ?? 3)) break;
    if (!picks.some((p) => p.batch === c.batch && p.policy === c.policy)) picks.push(c);
  }
  const checked: (Candidate & Figures)[] = [];
  for (const c of picks) {
    if (o.signal?.aborted) break;
    const policy = ADVISED_POLICIES.find((p) => p.policy === c.policy)!;
    const { summary } = await runSimulation({
      trace: o.trace,
      scaler: { ...o.scaler, batchSize: c.batch },
      releaseDelaySeconds: 0,
      policy: policy.make(),
      fulfilDelaySeconds: o.fulfilDelaySeconds,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    checked.push({
      batch: c.batch,
      policy: c.policy,
      releaseDelay: c.releaseDelay,
      nncWrites: summary.nncWrites,
      ipsAllocated: summary.ipsAllocated,
      ipsReleased: summary.ipsReleased,
      idleIpSeconds: summary.idleIpSeconds,
      podWaitP99Seconds: summary.podWaitP99Seconds,
    });
  }
  const advice = buildAdvice(
    o.trace.name,
    o.trace.durationSeconds,
    scaler.batch,
    checked,
    o.idleBudget,
  );
  return { ...advice, modelled: modelled.candidates };
}

/** The advice as text: the one-sentence verdict, the checked runs, the model's ranking. */
export function formatAdvice(a: TraceAdvice | Advice): string {
  const row = (c: Advice['candidates'][number]): string =>
    `  batch ${String(c.batch).padStart(3)}  --release-delay ${c.releaseDelay.padEnd(4)}  ` +
    `writes ${String(c.nncWrites).padStart(6)}  churn ${String(c.ipsAllocated + c.ipsReleased).padStart(7)}  ` +
    `idle ${String(c.idleIpSeconds).padStart(9)} IP-s  wait p99 ${c.podWaitP99Seconds} s${c.fits ? '' : '  (over budget)'}`;
  const lines = [
    `advice for ${a.source} (${(a.seconds / 3600).toFixed(2)} h): ${a.summary}`,
    `budget: idle <= ${a.budget.idleIpSeconds} IP-s (${a.budget.idleRatio}x CNS v2 at batch ${a.current.batch}), ` +
      `pod wait p99 <= ${a.budget.podWaitP99Seconds} s`,
    'checked in the simulation:',
    ...a.candidates.map(row),
  ];
  if ('modelled' in a) lines.push('ranked by the pool model:', ...a.modelled.map(row));
  return lines.join('\n');
}
