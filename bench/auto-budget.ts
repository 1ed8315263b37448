// `auto` against the fixed-delay frontier (docs/decisions/0034), on the
// serial control plane (src/sim/virtual-node.ts: one round of a node at a
// time, as the fulfiller works) at the CIDR and the Azure backend's timings
// (src/sim/fulfil-timing.ts): on every built-in trace and on generated
// traces of five families (Poisson with exponential and with Pareto
// lifetimes, diurnal rates, bursts, waves; src/sim/traces/families.ts, fixed
// seeds), each trace runs at each timing once through CNS v2 and the fixed
// delays 10, 30, 60, 120, 300, 600 and 1200 s, and through auto at
// --idle-budget 1.2, 1.5 and 2.0 (batch 16, the product's simulate path).
// The fixed runs are shared by the three budgets. For each trace, timing and
// budget it prints the frontier (every fixed delay) and beside auto the best
// fixed delay that keeps the promise auto is held to (fewest writes, then
// least churn), as writes / churn / idle x CNS v2, and checks:
//   promise: idle so far <= budget x CNS v2's at every moment, writes and
//            churn <= CNS v2, pod wait p99 <= CNS v2 + 0.5 s (auto: the idle
//            at the end within 1 %, src/sim/frontier.ts `promiseBroken`);
//   bound:   auto's writes and churn <= 1.1 x the best promise-keeping
//            delay's (or at most 2 more writes / 32 more IPs, for traces
//            with a handful), every miss with why (frontier.ts `missReason`).
// It ends, per timing, with "promise held in K of M; bound held in N of M
// (P %)" and how long it took.
//
// Every (trace, timing, policy) run is one task, handed out to JOBS worker
// processes (default 2), longest trace first. AUTO_BUDGET_CACHE=dir keeps the
// fixed-delay runs on disk, keyed by the trace's points, the timing and the
// simulator's sources outside auto and its budget: a rerun after changing
// auto simulates only auto.
// Run: node bench/auto-budget.ts (TRACES=a,b only these traces (built-in or
// <family>-<seed>), SEEDS=n per family (default 1), FAMILY=name; WEEKLY=1
// adds weekly-7d; BUDGETS=1.5,2; TIMINGS=azure or seconds).
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { autoPolicy } from '../src/scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../src/scaling/policies/budget/idle-budget.ts';
import { fixedDelayPolicy } from '../src/scaling/policies/fixed-delay.ts';
import { churn } from '../src/sim/compare.ts';
import {
  frontierVerdict,
  missReason,
  peakIdleRatio,
  promiseKeepingDelays,
  type FrontierVerdict,
} from '../src/sim/frontier.ts';
import { parseFulfilTiming, timingLabel, type FulfilTiming } from '../src/sim/fulfil-timing.ts';
import { runSimulation } from '../src/sim/simulate.ts';
import { idleSoFar, type SimulationSummary } from '../src/sim/summary.ts';
import { BUILT_IN_TRACES, type Trace } from '../src/sim/trace.ts';
import { FAMILIES, familyTrace, type FamilyName } from '../src/sim/traces/families.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const TIMINGS: FulfilTiming[] = (process.env.TIMINGS ?? 'cidr,azure')
  .split(',')
  .map(parseFulfilTiming);
const BUDGETS = process.env.BUDGETS?.split(',').map(Number) ?? [1.2, 1.5, 2.0];
const DELAYS = [0, 10, 30, 60, 120, 300, 600, 1200];
const JOBS = Math.max(1, Number(process.env.JOBS ?? 2));

/** A trace by name: a built-in one or `<family>-<seed>`. */
type TraceRef = { builtIn: string } | { family: FamilyName; seed: number };
type PolicyRef = { delay: number } | { budget: number };
interface Task {
  trace: TraceRef;
  name: string;
  timing: FulfilTiming;
  policy: PolicyRef;
}

/** Results are kept per trace and timing. */
const keyOf = (name: string, timing: FulfilTiming): string => `${name} @ ${timingLabel(timing)}`;

function traceOf(ref: TraceRef): Trace {
  return 'builtIn' in ref ? BUILT_IN_TRACES[ref.builtIn]!() : familyTrace(ref.family, ref.seed);
}

/** A run's summary, with its idle IP-seconds so far (summary.ts `idleSoFar` pairs). */
type RunFigures = SimulationSummary & { idleSoFar: number[] };

async function run(trace: Trace, timing: FulfilTiming, policy: PolicyRef): Promise<RunFigures> {
  const { summary, samples } = await runSimulation({
    trace,
    scaler,
    releaseDelaySeconds: 0,
    policy:
      'delay' in policy
        ? fixedDelayPolicy(policy.delay * 1000)
        : withIdleBudget(autoPolicy(), policy.budget),
    fulfilTiming: timing,
  });
  return { ...summary, idleSoFar: idleSoFar(samples, summary.simulatedSeconds) };
}

/** Every trace of the run, longest first. */
function allTraces(): { ref: TraceRef; trace: Trace }[] {
  const only = process.env.TRACES?.split(',');
  const seeds = Number(process.env.SEEDS ?? 1);
  const families = process.env.FAMILY ? [process.env.FAMILY as FamilyName] : FAMILIES;
  const refs: TraceRef[] = Object.keys(BUILT_IN_TRACES)
    .filter((n) => (only ? only.includes(n) : n !== 'weekly-7d' || process.env.WEEKLY === '1'))
    .map((builtIn) => ({ builtIn }));
  for (const family of families) {
    for (let seed = 1; seed <= seeds; seed += 1) {
      if (!only || only.includes(`${family}-${seed}`)) refs.push({ family, seed });
    }
  }
  const traces = refs.map((ref) => ({ ref, trace: traceOf(ref) }));
  // Longest first by simulated events (points), then by length.
  const weight = (t: Trace): number => t.points.length + t.durationSeconds / 60;
  return traces.sort((a, b) => weight(b.trace) - weight(a.trace));
}

/** The hash of every source file under `dir` but those under `skip` (sorted by path). */
function sourcesHash(dir: string, skip: readonly string[]): string {
  const hash = createHash('sha256');
  const walk = (d: string): void => {
    for (const entry of readdirSync(d).sort()) {
      const path = join(d, entry);
      if (skip.some((s) => path.startsWith(s))) continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) hash.update(path).update(readFileSync(path));
    }
  };
  walk(dir);
  return hash.digest('hex');
}

/** Fixed-delay runs kept on disk (AUTO_BUDGET_CACHE): they do not depend on auto. */
function fixedCache(): {
  get(t: Trace, timing: FulfilTiming, d: number): RunFigures | undefined;
  put(t: Trace, timing: FulfilTiming, d: number, s: RunFigures): void;
} {
  const dir = process.env.AUTO_BUDGET_CACHE;
  if (dir === undefined || dir === '') return { get: () => undefined, put: () => undefined };
  mkdirSync(dir, { recursive: true });
  const root = new URL('../src/', import.meta.url).pathname;
  const code = sourcesHash(root, [
    join(root, 'scaling/policies/auto'),
    join(root, 'scaling/policies/budget'),
  ]);
  const key = (t: Trace, timing: FulfilTiming, d: number): string =>
    join(
      dir,
      createHash('sha256')
        .update(`${code}\n${JSON.stringify(timing)}\n${JSON.stringify(scaler)}\n${d}\n`)
        .update(JSON.stringify(t))
        .digest('hex')
        .slice(0, 32) + '.json',
    );
  return {
    get: (t, timing, d) => {
      try {
        const hit = JSON.parse(readFileSync(key(t, timing, d), 'utf8')) as RunFigures;
        // Saved before the idle so far was kept: run again.
        return Array.isArray(hit.idleSoFar) ? hit : undefined;
      } catch {
        return undefined;
      }
    },
    put: (t, timing, d, s) => writeFileSync(key(t, timing, d), JSON.stringify(s)),
  };
}

/** A moment of a run, as `3 h 20 min` or `45 s`. */
const when = (seconds: number): string =>
  seconds < 60
    ? `${Math.round(seconds)} s`
    : seconds < 3600
      ? `${Math.floor(seconds / 60)} min`
      : `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
const x = (a: number, b: number): string =>
  b === 0 ? (a === 0 ? '1.00' : 'inf') : (a / b).toFixed(2);
const figures = (s: SimulationSummary, c: SimulationSummary): string =>
  `${x(s.nncWrites, c.nncWrites)} / ${x(churn(s), churn(c))} / ${x(s.idleIpSeconds, c.idleIpSeconds)}`;
const f = (r: { writes: number; churn: number; idle: number }): string =>
  `${r.writes.toFixed(2)} / ${r.churn.toFixed(2)} / ${r.idle.toFixed(2)}`;

interface Row {
  trace: string;
  timing: FulfilTiming;
  budget: number;
  /** auto against the best fixed delay that keeps the promise (promiseKeepingDelays). */
  v: FrontierVerdict;
  waitP99: { auto: number; best: number; cns: number };
  /** The best delay's and auto's highest idle ratio so far at any moment (peakIdleRatio). */
  bestPeak?: { ratio: number; at: number };
  autoPeak?: { ratio: number; at: number };
  /** Delays that broke the promise on the way (not yardsticks here), and why. */
  dropped: string[];
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const traces = allTraces();
  const cache = fixedCache();
  console.log(
    `auto vs the fixed delays ${DELAYS.join(', ')} s (writes / churn / idle, each x CNS v2) ` +
      `on the serial control plane at ${TIMINGS.map(timingLabel).join(' and ')} timings, ` +
      `batch ${scaler.batchSize}, budgets ${BUDGETS.join(', ')}; ` +
      `${traces.length} traces, ${JOBS} worker processes`,
  );
  const results = new Map<
    string,
    { fixed: Map<number, RunFigures>; auto: Map<number, RunFigures>; ms: number }
  >();
  const tasks: Task[] = [];
  for (const { ref, trace } of traces) {
    for (const timing of TIMINGS) {
      const r = {
        fixed: new Map<number, RunFigures>(),
        auto: new Map<number, RunFigures>(),
        ms: 0,
      };
      results.set(keyOf(trace.name, timing), r);
      for (const d of DELAYS) {
        const hit = cache.get(trace, timing, d);
        if (hit !== undefined) r.fixed.set(d, hit);
        else tasks.push({ trace: ref, name: trace.name, timing, policy: { delay: d } });
      }
      for (const budget of BUDGETS) {
        tasks.push({ trace: ref, name: trace.name, timing, policy: { budget } });
      }
    }
  }
  const byName = new Map(traces.map((t) => [t.trace.name, t.trace]));
  const rows: Row[] = [];
  const done = (name: string, timing: FulfilTiming): void => {
    const r = results.get(keyOf(name, timing))!;
    if (r.fixed.size < DELAYS.length || r.auto.size < BUDGETS.length) return;
    // In DELAYS order, whatever order the workers finished in: ties go to the shorter delay.
    r.fixed = new Map(DELAYS.map((d) => [d, r.fixed.get(d)!]));
    const cns = r.fixed.get(0)!;
    const peaks = new Map(
      DELAYS.map((d) => [d, peakIdleRatio(r.fixed.get(d)!.idleSoFar, cns.idleSoFar)]),
    );
    const cells: string[] = [];
    for (const budget of BUDGETS) {
      const auto = r.auto.get(budget)!;
      const keeping = promiseKeepingDelays(budget, r.fixed, peaks);
      const v = frontierVerdict(budget, auto, keeping);
      const best = r.fixed.get(v.bestDelay)!;
      const dropped = DELAYS.filter((d) => !keeping.has(d)).map((d) => {
        const s = r.fixed.get(d)!;
        const peak = peaks.get(d);
        const why = [
          ...((peak?.ratio ?? 0) > budget
            ? [`idle ${peak!.ratio.toFixed(2)} at ${when(peak!.at)}`]
            : []),
          ...(s.podWaitP99Seconds > cns.podWaitP99Seconds + 0.5
            ? [`wait p99 ${s.podWaitP99Seconds.toFixed(1)} s`]
            : []),
          ...(s.nncWrites > cns.nncWrites ? ['writes'] : []),
          ...(churn(s) > churn(cns) ? ['churn'] : []),
        ];
        return `${d}s (${why.join(', ')})`;
      });
      const bestPeak = peaks.get(v.bestDelay);
      const autoPeak = peakIdleRatio(auto.idleSoFar, cns.idleSoFar);
      rows.push({
        trace: name,
        timing,
        budget,
        v,
        waitP99: {
          auto: auto.podWaitP99Seconds,
          best: best.podWaitP99Seconds,
          cns: cns.podWaitP99Seconds,
        },
        dropped,
        ...(bestPeak !== undefined ? { bestPeak } : {}),
        ...(autoPeak !== undefined ? { autoPeak } : {}),
      });
      cells.push(
        `${budget}: auto ${figures(auto, cns)} vs delay-${v.bestDelay}s ${figures(best, cns)}` +
          (v.promiseBroken.length > 0 ? ` PROMISE BROKEN (${v.promiseBroken.join(', ')})` : '') +
          (v.frontierMissed.length > 0
            ? ` BOUND MISSED (${v.frontierMissed.join(', ')}: ${missReason(v, autoPeak?.ratio)})`
            : '') +
          (dropped.length > 0 ? `; not keeping the promise: ${dropped.join(', ')}` : ''),
      );
    }
    const frontier = DELAYS.map((d) => `${d}s ${figures(r.fixed.get(d)!, cns)}`).join('; ');
    console.log(
      `${keyOf(name, timing)} (${(r.ms / 1000).toFixed(1)} s of runs): CNS v2 ${cns.nncWrites} writes, ` +
        `${churn(cns)} churn, ${Math.round(cns.idleIpSeconds)} idle IP-s, wait p99 ${cns.podWaitP99Seconds.toFixed(2)} s\n` +
        `  delays: ${frontier}\n  ${cells.join('\n  ')}`,
    );
  };
  // Every fixed run cached and no budget: nothing to run.
  for (const { trace } of traces) for (const timing of TIMINGS) done(trace.name, timing);
  const queue = [...tasks];
  await Promise.all(
    Array.from({ length: Math.min(JOBS, queue.length) }, () => {
      const child = fork(process.argv[1]!, [], {
        execArgv: process.execArgv,
        env: { ...process.env, AUTO_BUDGET_WORKER: '1' },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const next = (): void => {
        const task = queue.shift();
        if (task === undefined) child.disconnect();
        else child.send(task);
      };
      child.on('message', (m: { task: Task; summary: RunFigures; ms: number }) => {
        const r = results.get(keyOf(m.task.name, m.task.timing))!;
        r.ms += m.ms;
        if ('delay' in m.task.policy) {
          r.fixed.set(m.task.policy.delay, m.summary);
          cache.put(byName.get(m.task.name)!, m.task.timing, m.task.policy.delay, m.summary);
        } else r.auto.set(m.task.policy.budget, m.summary);
        done(m.task.name, m.task.timing);
        next();
      });
      next();
      return new Promise<void>((resolve, reject) =>
        child.on('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`worker: exit ${code}`)),
        ),
      );
    }),
  );
  const order = traces.map((t) => t.trace.name);
  rows.sort(
    (a, b) =>
      TIMINGS.indexOf(a.timing) - TIMINGS.indexOf(b.timing) ||
      order.indexOf(a.trace) - order.indexOf(b.trace) ||
      a.budget - b.budget,
  );
  report(rows, performance.now() - t0);
}

function report(all: Row[], ms: number): void {
  const peak = (p: { ratio: number; at: number } | undefined): string =>
    p ? `${p.ratio.toFixed(2)} at ${when(p.at)}` : '-';
  for (const timing of TIMINGS) {
    const rows = all.filter((r) => r.timing === timing);
    console.log(`\n### ${timingLabel(timing)} timing\n`);
    console.log(
      "| trace | budget | best promise-keeping delay | its writes / churn / idle x CNS v2 | its highest idle ratio | auto | auto's highest | wait p99 auto / best / CNS v2 | promise | bound |",
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      const v = r.v;
      console.log(
        `| ${r.trace} | ${r.budget} | ${v.bestDelay} s | ${f(v.best)} | ${peak(r.bestPeak)} | ` +
          `${f(v.auto)} | ${peak(r.autoPeak)} | ` +
          `${r.waitP99.auto.toFixed(1)} / ${r.waitP99.best.toFixed(1)} / ${r.waitP99.cns.toFixed(1)} s | ` +
          `${v.promiseBroken.length === 0 ? 'held' : `BROKEN (${v.promiseBroken.join(', ')})`} | ` +
          `${v.frontierMissed.length === 0 ? 'held' : `MISSED (${v.frontierMissed.join(', ')})`} |`,
      );
    }
    const kept = rows.filter((r) => r.v.promiseBroken.length === 0).length;
    const held = rows.filter((r) => r.v.frontierMissed.length === 0).length;
    const pct = rows.length === 0 ? 100 : (100 * held) / rows.length;
    console.log(
      `\n${timingLabel(timing)}: promise held in ${kept} of ${rows.length}; ` +
        `bound held in ${held} of ${rows.length} (${pct.toFixed(1)} %, goal 95 %)`,
    );
    for (const r of rows.filter((x) => x.v.frontierMissed.length > 0)) {
      console.log(
        `  missed: ${r.trace} at ${r.budget} (${r.v.frontierMissed.join(', ')} against ${r.v.bestDelay} s): ` +
          missReason(r.v, r.autoPeak?.ratio),
      );
    }
    const autoAbove = rows.filter((r) => (r.autoPeak?.ratio ?? 0) > r.budget * 1.01).length;
    console.log(
      `  auto's idle so far above 1.01 x the budget at some moment: ${autoAbove} of ${rows.length}`,
    );
  }
  console.log(`\n${(ms / 1000).toFixed(0)} s with ${JOBS} worker processes`);
}

if (process.env.AUTO_BUDGET_WORKER === '1') {
  // A worker: runs the tasks it is sent, one at a time, and sends back each summary.
  let cached: { name: string; trace: Trace } | undefined;
  process.on('message', (task: Task) => {
    void (async () => {
      if (cached?.name !== task.name) cached = { name: task.name, trace: traceOf(task.trace) };
      const started = performance.now();
      const summary = await run(cached.trace, task.timing, task.policy);
      process.send!({ task, summary, ms: performance.now() - started });
    })();
  });
} else {
  await main();
}
