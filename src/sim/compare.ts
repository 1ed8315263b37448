// `simulate --compare`: one trace through several pool policies, each run on
// the product's own path (simulate.ts), side by side. The peers' policies are
// models (src/sim/peers), each with the source of its rule.
import type { ScalerSpec } from '../nnc/types.ts';
import { autoPolicy } from '../scaling/policies/auto/auto.ts';
import {
  DEFAULT_IDLE_BUDGET,
  withIdleBudget,
  type IdleAccountView,
} from '../scaling/policies/budget/idle-budget.ts';
import { cnsV2Policy, fixedDelayPolicy } from '../scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../scaling/policies/policy.ts';
import type { FulfilTimingName } from './fulfil-timing.ts';
import { cnsV1Model } from './peers/cns-v1.ts';
import { awsModel, ciliumModel } from './peers/watermark.ts';
import { runSimulation } from './simulate.ts';
import type { Sample, SimulationSummary } from './summary.ts';
import type { Trace } from './trace.ts';

export interface ComparedPolicy {
  name: string;
  /** What it is, in a few words, with the source of a peer's rule. */
  description: string;
  make: () => AnyPolicy;
}

/** The policies `--compare` runs, in table order: CNS v2 first (the yardstick). */
export function fixedDelayCompared(seconds: number): ComparedPolicy {
  return {
    name: `delay-${seconds}s`,
    description: `this product, --release-delay ${seconds}: a lower target once it has held ${seconds} s`,
    make: () => fixedDelayPolicy(seconds * 1000),
  };
}

export function comparedPolicies(
  scaler: ScalerSpec,
  idleBudget = DEFAULT_IDLE_BUDGET,
): ComparedPolicy[] {
  const fixed = fixedDelayCompared;
  return [
    {
      name: 'cns-v2',
      description:
        'Azure CNS v2 exactly (--release-delay 0): batch x ceil(buffer + demand / batch)',
      make: cnsV2Policy,
    },
    {
      name: 'cns-v1',
      description:
        'model of Azure CNS v1: one batch at a time below requestThreshold / above releaseThreshold free IPs ' +
        '(azure-container-networking docs/feature/subnet-scarcity)',
      make: () => cnsV1Model({ releaseThresholdPercent: scaler.releaseThresholdPercent ?? 150 }),
    },
    fixed(30),
    fixed(60),
    fixed(180),
    {
      name: 'cilium-like',
      description:
        'model of Cilium ENI/Azure IPAM: pre-allocate 8, max-above-watermark 0, excess released after 180 s ' +
        '(docs.cilium.io ipam/eni, --excess-ip-release-delay)',
      make: ciliumModel,
    },
    {
      name: 'aws-like',
      description:
        'model of the AWS VPC CNI: WARM_IP_TARGET 8, MINIMUM_IP_TARGET 16, 30 s cooldown ' +
        '(github.com/aws/amazon-vpc-cni-k8s)',
      make: awsModel,
    },
    {
      name: 'auto',
      description: `this product, --release-delay auto: keeps what its history says comes back, within ${idleBudget} x the idle IPs of CNS v2 (--idle-budget)`,
      make: () => withIdleBudget(autoPolicy(), idleBudget),
    },
  ];
}

export interface ComparisonRow {
  policy: string;
  description: string;
  summary: SimulationSummary;
  samples: Sample[];
  /** The policy's own live account against the CNS v2 counterfactual (auto). */
  account?: IdleAccountView;
}

export interface Comparison {
  trace: { name: string; description: string; durationSeconds: number };
  scaler: ScalerSpec;
  fulfilDelaySeconds: number;
  /** The control plane at a backend's speed, when it replaced the fixed delay. */
  fulfilTiming?: FulfilTimingName;
  rows: ComparisonRow[];
}

export interface ComparisonOptions {
  trace: Trace;
  scaler: ScalerSpec;
  fulfilDelaySeconds: number;
  /** The control plane at a backend's speed (overrides fulfilDelaySeconds). */
  fulfilTiming?: FulfilTimingName;
  /** auto's --idle-budget; DEFAULT_IDLE_BUDGET when absent. */
  idleBudget?: number;
  /** Only these policies (by name), in this order; all when absent. */
  only?: readonly string[];
  signal?: AbortSignal;
  /** Told as each policy finishes (progress). */
  onRow?: (row: ComparisonRow) => void;
}

export class UnknownPolicyError extends Error {
  override readonly name = 'UnknownPolicyError';
}

export async function runComparison(o: ComparisonOptions): Promise<Comparison> {
  const all = comparedPolicies(o.scaler, o.idleBudget);
  let chosen = all;
  if (o.only !== undefined) {
    chosen = o.only.map((name) => {
      const delay = /^delay-(\d+(?:\.\d+)?)s$/.exec(name);
      const p =
        all.find((c) => c.name === name) ??
        (delay ? fixedDelayCompared(Number(delay[1])) : undefined);
      if (p === undefined) {
        throw new UnknownPolicyError(
          `unknown policy "${name}" (one of ${all.map((c) => c.name).join(', ')})`,
        );
      }
      return p;
    });
  }
  const rows: ComparisonRow[] = [];
  for (const p of chosen) {
    if (o.signal?.aborted) break;
    const { summary, samples, account } = await runSimulation({
      trace: o.trace,
      scaler: o.scaler,
      releaseDelaySeconds: 0,
      policy: p.make(),
      fulfilDelaySeconds: o.fulfilDelaySeconds,
      ...(o.fulfilTiming !== undefined ? { fulfilTiming: o.fulfilTiming } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    });
    const row: ComparisonRow = {
      policy: p.name,
      description: p.description,
      summary,
      samples,
      ...(account !== undefined ? { account } : {}),
    };
    rows.push(row);
    o.onRow?.(row);
  }
  return {
    trace: {
      name: o.trace.name,
      description: o.trace.description,
      durationSeconds: o.trace.durationSeconds,
    },
    scaler: o.scaler,
    fulfilDelaySeconds: o.fulfilDelaySeconds,
    ...(o.fulfilTiming !== undefined ? { fulfilTiming: o.fulfilTiming } : {}),
    rows,
  };
}

/** IP churn: addresses allocated plus released. */
export function churn(s: SimulationSummary): number {
  return s.ipsAllocated + s.ipsReleased;
}

export interface TableRow {
  policy: string;
  writes: number;
  churn: number;
  idleIpSeconds: number;
  podWaitP50Seconds: number;
  podWaitP99Seconds: number;
  podWaitMaxSeconds: number;
  /** Ratios to the first row (CNS v2 when present). */
  writesRatio: number;
  churnRatio: number;
  idleRatio: number;
}

function ratio(a: number, b: number): number {
  if (b === 0) return a === 0 ? 1 : Number.POSITIVE_INFINITY;
  return Math.round((a / b) * 100) / 100;
}

/** The figures of the table, one row per policy, as printed and as in the HTML report. */
export function comparisonTable(c: Comparison): TableRow[] {
  const base = c.rows.find((r) => r.policy === 'cns-v2') ?? c.rows[0];
  return c.rows.map((r) => {
    const s = r.summary;
    const b = base?.summary ?? s;
    return {
      policy: r.policy,
      writes: s.nncWrites,
      churn: churn(s),
      idleIpSeconds: s.idleIpSeconds,
      podWaitP50Seconds: s.podWaitP50Seconds,
      podWaitP99Seconds: s.podWaitP99Seconds,
      podWaitMaxSeconds: s.podWaitMaxSeconds,
      writesRatio: ratio(s.nncWrites, b.nncWrites),
      churnRatio: ratio(churn(s), churn(b)),
      idleRatio: ratio(s.idleIpSeconds, b.idleIpSeconds),
    };
  });
}

const HEADERS = [
  'policy',
  'NNC writes',
  'IP churn',
  'idle IP-s',
  'wait p50',
  'wait p99',
  'wait max',
  'writes x',
  'churn x',
  'idle x',
];

export function tableCells(r: TableRow): string[] {
  return [
    r.policy,
    String(r.writes),
    String(r.churn),
    String(r.idleIpSeconds),
    `${r.podWaitP50Seconds} s`,
    `${r.podWaitP99Seconds} s`,
    `${r.podWaitMaxSeconds} s`,
    r.writesRatio.toFixed(2),
    r.churnRatio.toFixed(2),
    r.idleRatio.toFixed(2),
  ];
}

export function comparisonHeaders(): string[] {
  return [...HEADERS];
}

/** How the comparison's control plane fulfils writes, as a person reads it. */
export function controlPlaneLabel(
  c: Pick<Comparison, 'fulfilDelaySeconds' | 'fulfilTiming'>,
): string {
  return c.fulfilTiming !== undefined
    ? `the control plane at ${c.fulfilTiming}'s timing`
    : `fulfil delay ${c.fulfilDelaySeconds} s`;
}

/** The same as a sentence (the HTML report). */
export function controlPlaneSentence(
  c: Pick<Comparison, 'fulfilDelaySeconds' | 'fulfilTiming'>,
): string {
  return c.fulfilTiming !== undefined
    ? `the control plane works one round of the node at a time at the ${c.fulfilTiming} backend's timing (src/sim/fulfil-timing.ts)`
    : `the control plane fulfils a write after ${c.fulfilDelaySeconds} s`;
}

/** The comparison as a plain-text table (ratios against CNS v2). */
export function formatComparison(c: Comparison): string {
  const rows = [HEADERS, ...comparisonTable(c).map(tableCells)];
  const widths = HEADERS.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const s = c.scaler;
  return [
    `comparison: ${c.trace.name} (${c.trace.description}), ${(c.trace.durationSeconds / 3600).toFixed(2)} h, ` +
      `batch ${s.batchSize}, threshold ${s.requestThresholdPercent} %, ${controlPlaneLabel(c)}`,
    line(rows[0]!),
    ...rows.slice(1).map(line),
    ...c.rows.flatMap((r) => (r.account ? [formatAccount(r.policy, r.account, r.summary)] : [])),
  ].join('\n');
}

/** A policy's own live account, as /debug/pool shows it: idle vs the CNS v2 counterfactual, writes saved. */
export function formatAccount(policy: string, a: IdleAccountView, s: SimulationSummary): string {
  const n = (x: number): string => x.toLocaleString('en-US');
  return (
    `${policy}'s own account (live, against CNS v2 computed from the same demand): ` +
    `idle ${n(a.heldIdleIpSeconds)} vs ${n(a.cnsV2IdleIpSeconds)} IP-s (${a.idleRatio.toFixed(2)} x, ` +
    `budget ${a.budget} x; last hour ${a.window.idleRatio.toFixed(2)} x), ` +
    `writes ${s.nncWrites} vs ${a.cnsV2Writes} (${a.cnsV2Writes - s.nncWrites} saved), ` +
    `churn ${a.churn} vs ${a.cnsV2Churn}`
  );
}
