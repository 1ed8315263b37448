// `auto` against the fixed-delay frontier (docs/decisions/0034): on every
// built-in trace and on generated traces of five families (Poisson with
// exponential and with Pareto lifetimes, diurnal rates, bursts, waves;
// src/sim/traces/families.ts, fixed seeds), each trace runs once through
// CNS v2 and the fixed delays 10, 30, 60, 120, 300, 600 and 1200 s, and
// through auto at --idle-budget 1.2, 1.5 and 2.0 (--fulfil-delay 2, batch
// 16, the product's simulate path). The fixed runs are shared by the three
// budgets. For each trace and budget it prints the frontier (every fixed
// delay) and the best fixed delay whose idle IP-seconds fit within budget x
// CNS v2's (fewest writes, then least churn) beside auto, as writes / churn /
// idle x CNS v2, and checks:
//   promise: idle <= budget x CNS v2 (1 %), writes and churn <= CNS v2,
//            pod wait p99 <= CNS v2 + 0.5 s;
//   writes bound: auto's writes and churn <= 1.1 x the best fitting delay's
//            (or at most 2 more writes / 32 more IPs, for traces with a handful).
// Beside the best fitting delay it prints that delay's highest ratio of idle
// so far to CNS v2's at any moment (and auto's): a delay judged by its idle
// at the end may have run above the budget on the way, which auto, held to
// the budget at every moment, may not; the last lines count the misses
// against such a delay, and the counts again against the best delay that
// stayed within the budget at every moment as well.
// It ends with "writes bound held in N of M; promise held in K of M" and
// how long it took.
//
// Every (trace, policy) run is one task, handed out to JOBS worker processes
// (default 2), longest trace first, so a long trace's eleven runs are shared
// out too. AUTO_BUDGET_CACHE=dir keeps the fixed-delay runs on disk, keyed
// by the trace's points and the simulator's sources outside auto and its
// budget: a rerun after changing auto simulates only auto.
// Run: node bench/auto-budget.ts (TRACES=a,b only these traces (built-in or <family>-<seed>), SEEDS=n per
// family (default 1), FAMILY=name; WEEKLY=1 adds weekly-7d; BUDGETS=1.5,2).
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { autoPolicy } from '../src/scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../src/scaling/policies/budget/idle-budget.ts';
import { fixedDelayPolicy } from '../src/scaling/policies/fixed-delay.ts';
import { churn } from '../src/sim/compare.ts';
import { frontierVerdict, peakIdleRatio, type FrontierVerdict } from '../src/sim/frontier.ts';
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
const FULFIL_DELAY_SECONDS = 2;
const BUDGETS = process.env.BUDGETS?.split(',').map(Number) ?? [1.2, 1.5, 2.0];
const DELAYS = [0, 10, 30, 60, 120, 300, 600, 1200];
const JOBS = Math.max(1, Number(process.env.JOBS ?? 2));

/** A trace by name: a built-in one or `<family>-<seed>`. */
type TraceRef = { builtIn: string } | { family: FamilyName; seed: number };
type PolicyRef = { delay: number } | { budget: number };
interface Task {
  trace: TraceRef;
  name: string;
  policy: PolicyRef;
}

function traceOf(ref: TraceRef): Trace {
  return 'builtIn' in ref ? BUILT_IN_TRACES[ref.builtIn]!() : familyTrace(ref.family, ref.seed);
}

/** A run's summary, with its idle IP-seconds so far (summary.ts `idleSoFar` pairs). */
type RunFigures = SimulationSummary & { idleSoFar: number[] };

async function run(trace: Trace, policy: PolicyRef): Promise<RunFigures> {
  const { summary, samples } = await runSimulation({
    trace,
    scaler,
    releaseDelaySeconds: 0,
    policy:
      'delay' in policy
        ? fixedDelayPolicy(policy.delay * 1000)
        : withIdleBudget(autoPolicy(), policy.budget),
    fulfilDelaySeconds: FULFIL_DELAY_SECONDS,
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
  get(t: Trace, d: number): RunFigures | undefined;
  put(t: Trace, d: number, s: RunFigures): void;
} {
  const dir = process.env.AUTO_BUDGET_CACHE;
  if (dir === undefined || dir === '') return { get: () => undefined, put: () => undefined };
  mkdirSync(dir, { recursive: true });
  const root = new URL('../src/', import.meta.url).pathname;
  const code = sourcesHash(root, [
    join(root, 'scaling/policies/auto'),
    join(root, 'scaling/policies/budget'),
  ]);
  const key = (t: Trace, d: number): string =>
    join(
      dir,
      createHash('sha256')
        .update(`${code}\n${FULFIL_DELAY_SECONDS}\n${JSON.stringify(scaler)}\n${d}\n`)
        .update(JSON.stringify(t))
        .digest('hex')
        .slice(0, 32) + '.json',
    );
  return {
    get: (t, d) => {
      try {
        const hit = JSON.parse(readFileSync(key(t, d), 'utf8')) as RunFigures;
        // Saved before the idle so far was kept: run again.
        return Array.isArray(hit.idleSoFar) ? hit : undefined;
      } catch {
        return undefined;
      }
    },
    put: (t, d, s) => writeFileSync(key(t, d), JSON.stringify(s)),
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
  budget: number;
  v: FrontierVerdict;
  waitP99: { auto: number; cns: number };
  /** The best fitting delay's and auto's highest idle ratio so far at any moment (peakIdleRatio). */
  bestPeak?: { ratio: number; at: number };
  autoPeak?: { ratio: number; at: number };
  /** The verdict against the fixed delays within the budget at every moment too. */
  everyMoment: FrontierVerdict;
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const traces = allTraces();
  const cache = fixedCache();
  console.log(
    `auto vs the fixed delays ${DELAYS.join(', ')} s (writes / churn / idle, each x CNS v2), ` +
      `--fulfil-delay ${FULFIL_DELAY_SECONDS}, batch ${scaler.batchSize}, budgets ${BUDGETS.join(', ')}; ` +
      `${traces.length} traces, ${JOBS} worker processes`,
  );
  const results = new Map<
    string,
    { fixed: Map<number, RunFigures>; auto: Map<number, RunFigures>; ms: number }
  >();
  const tasks: Task[] = [];
  for (const { ref, trace } of traces) {
    const r = {
      fixed: new Map<number, RunFigures>(),
      auto: new Map<number, RunFigures>(),
      ms: 0,
    };
    results.set(trace.name, r);
    for (const d of DELAYS) {
      const hit = cache.get(trace, d);
      if (hit !== undefined) r.fixed.set(d, hit);
      else tasks.push({ trace: ref, name: trace.name, policy: { delay: d } });
    }
    for (const budget of BUDGETS) tasks.push({ trace: ref, name: trace.name, policy: { budget } });
  }
  const byName = new Map(traces.map((t) => [t.trace.name, t.trace]));
  const rows: Row[] = [];
  const done = (name: string): void => {
    const r = results.get(name)!;
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
      const v = frontierVerdict(budget, auto, r.fixed);
      const bestPeak = peaks.get(v.bestDelay);
      const autoPeak = peakIdleRatio(auto.idleSoFar, cns.idleSoFar);
      const withinEveryMoment = new Map(
        [...r.fixed].filter(([d]) => (peaks.get(d)?.ratio ?? 0) <= budget),
      );
      rows.push({
        trace: name,
        budget,
        v,
        everyMoment: frontierVerdict(budget, auto, withinEveryMoment),
        waitP99: { auto: auto.podWaitP99Seconds, cns: cns.podWaitP99Seconds },
        ...(bestPeak !== undefined ? { bestPeak } : {}),
        ...(autoPeak !== undefined ? { autoPeak } : {}),
      });
      const best = r.fixed.get(v.bestDelay)!;
      cells.push(
        `${budget}: auto ${figures(auto, cns)} vs delay-${v.bestDelay}s ${figures(best, cns)}` +
          (v.promiseBroken.length > 0 ? ` PROMISE BROKEN (${v.promiseBroken.join(', ')})` : '') +
          (v.frontierMissed.length > 0
            ? ` WRITES BOUND MISSED (${v.frontierMissed.join(', ')})`
            : ''),
      );
    }
    const frontier = DELAYS.map((d) => `${d}s ${figures(r.fixed.get(d)!, cns)}`).join('; ');
    console.log(
      `${name} (${(r.ms / 1000).toFixed(1)} s of runs): CNS v2 ${cns.nncWrites} writes, ` +
        `${churn(cns)} churn, ${Math.round(cns.idleIpSeconds)} idle IP-s, wait p99 ${cns.podWaitP99Seconds.toFixed(2)} s\n` +
        `  delays: ${frontier}\n  ${cells.join('\n  ')}`,
    );
  };
  for (const name of results.keys()) done(name); // every fixed run cached and no budget: nothing to run
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
        const r = results.get(m.task.name)!;
        r.ms += m.ms;
        if ('delay' in m.task.policy) {
          r.fixed.set(m.task.policy.delay, m.summary);
          cache.put(byName.get(m.task.name)!, m.task.policy.delay, m.summary);
        } else r.auto.set(m.task.policy.budget, m.summary);
        done(m.task.name);
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
  rows.sort((a, b) => order.indexOf(a.trace) - order.indexOf(b.trace) || a.budget - b.budget);
  report(rows, performance.now() - t0);
}

function report(all: Row[], ms: number): void {
  const kept = all.filter((r) => r.v.promiseBroken.length === 0).length;
  const held = all.filter((r) => r.v.frontierMissed.length === 0).length;
  console.log(
    `\n| trace | budget | best fitting delay | its writes / churn / idle x CNS v2 | its highest idle ratio so far | auto | auto's highest | wait p99 auto / CNS v2 | promise | writes bound |`,
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of all) {
    const v = r.v;
    const peak = (p: { ratio: number; at: number } | undefined): string =>
      p
        ? `${p.ratio.toFixed(2)} at ${when(p.at)}${p.ratio > r.budget ? ' (above the budget)' : ''}`
        : '-';
    console.log(
      `| ${r.trace} | ${r.budget} | ${v.bestDelay} s | ${f(v.best)} | ${peak(r.bestPeak)} | ` +
        `${f(v.auto)} | ${peak(r.autoPeak)} | ` +
        `${r.waitP99.auto.toFixed(2)} / ${r.waitP99.cns.toFixed(2)} s | ` +
        `${v.promiseBroken.length === 0 ? 'held' : `BROKEN (${v.promiseBroken.join(', ')})`} | ` +
        `${v.frontierMissed.length === 0 ? 'held' : `MISSED (${v.frontierMissed.join(', ')})`} |`,
    );
  }
  const missed = all.filter((r) => r.v.frontierMissed.length > 0);
  const above = missed.filter((r) => r.bestPeak !== undefined && r.bestPeak.ratio > r.budget);
  // The issue's bar is the writes; the bound above holds churn to the same 10 %.
  const writesHeld = all.filter((r) => !r.v.frontierMissed.includes('writes')).length;
  console.log(
    `\nwrites bound held in ${held} of ${all.length} (writes alone: ${writesHeld}); ` +
      `promise held in ${kept} of ${all.length}; ${(ms / 1000).toFixed(0)} s with ${JOBS} worker processes`,
  );
  console.log(
    'misses against a best delay whose idle so far ran above the budget at some moment ' +
      `(auto is held to it at every moment): ${above.length} of ${missed.length}`,
  );
  const everyMoment = all.filter((r) => r.everyMoment.frontierMissed.length === 0).length;
  const everyMomentWrites = all.filter(
    (r) => !r.everyMoment.frontierMissed.includes('writes'),
  ).length;
  console.log(
    'against the best delay within the budget at every moment as well (as auto is held): ' +
      `writes bound held in ${everyMoment} of ${all.length} (writes alone: ${everyMomentWrites})`,
  );
  const autoAbove = all.filter((r) => (r.autoPeak?.ratio ?? 0) > r.budget * 1.01).length;
  console.log(
    `auto's idle so far above 1.01 x the budget at some moment: ${autoAbove} of ${all.length}`,
  );
}

if (process.env.AUTO_BUDGET_WORKER === '1') {
  // A worker: runs the tasks it is sent, one at a time, and sends back each summary.
  let cached: { name: string; trace: Trace } | undefined;
  process.on('message', (task: Task) => {
    void (async () => {
      if (cached?.name !== task.name) cached = { name: task.name, trace: traceOf(task.trace) };
      const started = performance.now();
      const summary = await run(cached.trace, task.policy);
      process.send!({ task, summary, ms: performance.now() - started });
    })();
  });
} else {
  await main();
}
