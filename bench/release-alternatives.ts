// The alternatives docs/decisions/0021 weighed for `--release-delay auto`,
// measured on the goal table's yardstick and hold-out traces (--fulfil-delay 2,
// batch 16) through the product's own simulate path:
//
// - fixed delays (30, 60, 180 s: damping.ts),
// - a rolling quantile: never below the target of the 95th percentile of
//   the targets of the last 10 minutes (time-weighted),
// - an idle-time histogram, as serverless platforms pick a keep-alive
//   (Shahrad et al., "Serverless in the Wild", ATC 2020): the gaps between a
//   release and the next need of that capacity in 10-s bins up to 30 min;
//   the keep-alive is their 99th percentile (60 s before 5 gaps are seen, 0
//   when it falls beyond the histogram: the capacity is not coming back soon),
// - auto, the ski-rental rule on recorded gaps per pool level (the product).
//
// The two models here are bench code only, not product policies. Long (about
// ten minutes of CPU): not in the default `make bench`; run it with
// `make bench BENCHES=release-alternatives` (TRACES=a,b to choose traces).
import { dampedTarget, recordTarget, type TargetSample } from '../src/scaling/damping.ts';
import { autoPolicy } from '../src/scaling/policies/auto/auto.ts';
import { cnsV2Policy, fixedDelayPolicy } from '../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy, Observation, PoolPolicy } from '../src/scaling/policies/policy.ts';
import { churn } from '../src/sim/compare.ts';
import { runSimulation } from '../src/sim/simulate.ts';
import { BUILT_IN_TRACES } from '../src/sim/trace.ts';
import { HOLDOUT_TRACES } from '../src/sim/traces/holdout.ts';
import { YARDSTICK_TRACES } from '../src/sim/traces/yardstick.ts';

const MINUTE = 60_000;

/** Time-weighted q-quantile of the targets over [now - windowMs, now]. */
function windowQuantile(
  history: readonly TargetSample[],
  now: number,
  windowMs: number,
  q: number,
) {
  const start = now - windowMs;
  const spans: Array<{ target: number; ms: number }> = [];
  history.forEach((s, i) => {
    const from = Math.max(s.at, start);
    const to = history[i + 1]?.at ?? now;
    if (to > from) spans.push({ target: s.target, ms: to - from });
  });
  const total = spans.reduce((n, s) => n + s.ms, 0);
  spans.sort((a, b) => b.target - a.target);
  let above = 0;
  for (const s of spans) {
    above += s.ms;
    if (above >= (1 - q) * total) return s.target;
  }
  return spans[spans.length - 1]?.target ?? 0;
}

export function rollingQuantilePolicy(
  windowMs = 10 * MINUTE,
  q = 0.95,
): PoolPolicy<TargetSample[]> {
  return {
    name: 'rolling-p95-10m',
    initial: () => [],
    observe: (h, o: Observation) => recordTarget(h, o.at, o.target, windowMs),
    decide: (h, v) => {
      const keep = h.length === 0 ? v.target : windowQuantile(h, v.now, windowMs, q);
      const applied = Math.max(v.target, Math.min(keep, v.request));
      return {
        applied,
        deferred: applied > v.target,
        ...(applied > v.target ? { recheckAt: v.now + 10_000 } : {}),
      };
    },
  };
}

interface IdleMemory {
  history: TargetSample[];
  /** Gaps in 10-s bins, the last bin: beyond the histogram. */
  bins: number[];
  /** Releases not yet needed again: the level released to, since when. */
  open: Array<{ to: number; at: number }>;
}

const BIN_MS = 10_000;
const RANGE_MS = 30 * MINUTE;
const BINS = RANGE_MS / BIN_MS + 1;

function recordGap(bins: number[], gapMs: number): number[] {
  const next = [...bins];
  const i = Math.min(BINS - 1, Math.floor(gapMs / BIN_MS));
  next[i] = (next[i] ?? 0) + 1;
  return next;
}

function keepAliveMs(bins: readonly number[], q: number): number {
  const total = bins.reduce((n, c) => n + c, 0);
  if (total < 5) return MINUTE;
  let seen = 0;
  for (let i = 0; i < bins.length; i += 1) {
    seen += bins[i] ?? 0;
    if (seen >= q * total) return i === BINS - 1 ? 0 : (i + 1) * BIN_MS;
  }
  return 0;
}

export function idleHistogramPolicy(q = 0.99): PoolPolicy<IdleMemory> {
  return {
    name: 'idle-hist-p99',
    initial: () => ({ history: [], bins: new Array<number>(BINS).fill(0), open: [] }),
    observe: (m, o) => {
      const prev = m.history[m.history.length - 1]?.target;
      let { bins, open } = m;
      if (prev !== undefined && o.target < prev) open = [...open, { to: o.target, at: o.at }];
      if (prev !== undefined && o.target > prev) {
        // Capacity a release gave up is needed again: its idle time ends.
        for (const r of open.filter((r) => r.to < o.target)) bins = recordGap(bins, o.at - r.at);
        open = open.filter((r) => r.to >= o.target);
      }
      const expired = open.filter((r) => o.at - r.at > RANGE_MS).length;
      for (let i = 0; i < expired; i += 1) bins = recordGap(bins, RANGE_MS);
      open = open.filter((r) => o.at - r.at <= RANGE_MS).slice(-64);
      return { history: recordTarget(m.history, o.at, o.target, RANGE_MS), bins, open };
    },
    decide: (m, v) => {
      const d = dampedTarget(m.history, v.now, v.request, keepAliveMs(m.bins, q));
      return {
        applied: d.target,
        deferred: d.deferred,
        ...(d.recheckAt !== undefined ? { recheckAt: d.recheckAt } : {}),
      };
    },
  };
}

const POLICIES: Record<string, () => AnyPolicy> = {
  'cns-v2': cnsV2Policy,
  'delay-30s': () => fixedDelayPolicy(30_000),
  'delay-60s': () => fixedDelayPolicy(60_000),
  'delay-180s': () => fixedDelayPolicy(180_000),
  'rolling-p95-10m': () => rollingQuantilePolicy(),
  'idle-hist-p99': () => idleHistogramPolicy(),
  auto: () => autoPolicy(),
};

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const names = process.env.TRACES?.split(',') ?? [
  ...Object.keys(YARDSTICK_TRACES),
  ...Object.keys(HOLDOUT_TRACES),
];
const fmt = (x: number) => x.toFixed(2);
for (const name of names) {
  const make = BUILT_IN_TRACES[name];
  if (!make) throw new Error(`unknown trace ${name}`);
  const trace = make();
  console.log(
    `\n${name}: policy | writes | churn | idle IP-s | wait p99 s | x CNS v2 (writes/churn/idle)`,
  );
  let base: { w: number; c: number; i: number } | undefined;
  for (const [policy, build] of Object.entries(POLICIES)) {
    const started = performance.now();
    const { summary: s } = await runSimulation({
      trace,
      scaler,
      releaseDelaySeconds: 0,
      fulfilDelaySeconds: 2,
      policy: build(),
    });
    base ??= { w: s.nncWrites, c: churn(s), i: s.idleIpSeconds };
    console.log(
      `  ${policy.padEnd(16)} ${String(s.nncWrites).padStart(5)} ${String(churn(s)).padStart(6)} ` +
        `${String(s.idleIpSeconds).padStart(9)} ${String(s.podWaitP99Seconds).padStart(6)}   ` +
        `${fmt(s.nncWrites / base.w)} / ${fmt(churn(s) / base.c)} / ${fmt(s.idleIpSeconds / base.i)}` +
        `   (${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );
  }
}
