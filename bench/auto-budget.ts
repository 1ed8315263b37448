// `auto` against the fixed-delay frontier (docs/decisions/0034): on every
// built-in trace and on generated traces of five families (Poisson with
// exponential and with Pareto lifetimes, diurnal rates, bursts, waves;
// src/sim/traces/families.ts, fixed seeds), each trace runs once through
// CNS v2 and the fixed delays 10, 30, 60, 120, 300, 600 and 1200 s, and
// through auto at --idle-budget 1.2, 1.5 and 2.0 (--fulfil-delay 2, batch
// 16, the product's simulate path). For each budget it prints the best
// fixed delay whose idle IP-seconds fit within budget x CNS v2's (fewest
// writes, then least churn) beside auto, as writes / churn / idle x CNS v2,
// and checks:
//   promise: idle <= budget x CNS v2 (1 %), writes and churn <= CNS v2,
//            pod wait p99 <= CNS v2 + 0.5 s;
//   frontier: auto's writes and churn <= 1.1 x the best fitting delay's
//            (or at most 2 more writes / 32 more IPs, for traces with a handful).
// Run: node bench/auto-budget.ts (TRACES=a,b built-in traces, SEEDS=n per
// family (default 1), FAMILY=name; WEEKLY=1 adds weekly-7d, a few minutes on its own; JOBS=n processes,
// default 2: the traces are shared out, longest first).
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { autoPolicy } from '../src/scaling/policies/auto/auto.ts';
import { withIdleBudget } from '../src/scaling/policies/budget/idle-budget.ts';
import { fixedDelayPolicy } from '../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../src/scaling/policies/policy.ts';
import { churn } from '../src/sim/compare.ts';
import { runSimulation } from '../src/sim/simulate.ts';
import type { SimulationSummary } from '../src/sim/summary.ts';
import { BUILT_IN_TRACES, type Trace } from '../src/sim/trace.ts';
import { FAMILIES, familyTrace, type FamilyName } from '../src/sim/traces/families.ts';
import { frontierVerdict, type FrontierVerdict } from '../src/sim/frontier.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const FULFIL_DELAY_SECONDS = 2;
const BUDGETS = [1.2, 1.5, 2.0];
const DELAYS = [0, 10, 30, 60, 120, 300, 600, 1200];
const only = process.env.TRACES?.split(',');
const SEEDS = Number(process.env.SEEDS ?? 1);
const families = process.env.FAMILY ? [process.env.FAMILY as FamilyName] : FAMILIES;

async function run(trace: Trace, policy: AnyPolicy): Promise<SimulationSummary> {
  return (
    await runSimulation({
      trace,
      scaler,
      releaseDelaySeconds: 0,
      policy,
      fulfilDelaySeconds: FULFIL_DELAY_SECONDS,
    })
  ).summary;
}

const x = (a: number, b: number): string =>
  b === 0 ? (a === 0 ? '1.00' : 'inf') : (a / b).toFixed(2);
const figures = (s: SimulationSummary, c: SimulationSummary): string =>
  `${x(s.nncWrites, c.nncWrites)} / ${x(churn(s), churn(c))} / ${x(s.idleIpSeconds, c.idleIpSeconds)}`;

interface Row {
  trace: string;
  budget: number;
  v: FrontierVerdict;
}
const rows: Row[] = [];
const f = (r: { writes: number; churn: number; idle: number }): string =>
  `${r.writes.toFixed(2)} / ${r.churn.toFixed(2)} / ${r.idle.toFixed(2)}`;

async function compare(trace: Trace): Promise<void> {
  const started = performance.now();
  const fixed = new Map<number, SimulationSummary>();
  for (const d of DELAYS) fixed.set(d, await run(trace, fixedDelayPolicy(d * 1000)));
  const cns = fixed.get(0)!;
  const cells: string[] = [];
  for (const budget of BUDGETS) {
    const auto = await run(trace, withIdleBudget(autoPolicy(), budget));
    const v = frontierVerdict(budget, auto, fixed);
    rows.push({ trace: trace.name, budget, v });
    const best = fixed.get(v.bestDelay)!;
    cells.push(
      `${budget}: auto ${figures(auto, cns)} vs delay-${v.bestDelay}s ${figures(best, cns)}` +
        (v.promiseBroken.length > 0 ? ` PROMISE BROKEN (${v.promiseBroken.join(', ')})` : '') +
        (v.frontierMissed.length > 0 ? ` FRONTIER MISSED (${v.frontierMissed.join(', ')})` : ''),
    );
  }
  const frontier = DELAYS.map((d) => `${d}s ${figures(fixed.get(d)!, cns)}`).join('; ');
  console.log(
    `${trace.name} (${((performance.now() - started) / 1000).toFixed(1)} s): CNS v2 ${cns.nncWrites} writes, ` +
      `${churn(cns)} churn, ${cns.idleIpSeconds} idle IP-s\n  delays: ${frontier}\n  ${cells.join('\n  ')}`,
  );
}

const JOBS = Math.max(1, Number(process.env.JOBS ?? 2));
const shard = process.env.AUTO_BUDGET_SHARD;

/** Every trace of the run, longest first (so the shards come out even). */
function allTraces(): Trace[] {
  const builtIns = Object.keys(BUILT_IN_TRACES).filter((n) =>
    only ? only.includes(n) : n !== 'weekly-7d' || process.env.WEEKLY === '1',
  );
  const traces = builtIns.map((n) => BUILT_IN_TRACES[n]!());
  if (!only) {
    for (const family of families) {
      for (let seed = 1; seed <= SEEDS; seed += 1) traces.push(familyTrace(family, seed));
    }
  }
  return traces.sort((a, b) => b.durationSeconds - a.durationSeconds);
}

if (shard !== undefined) {
  // One of JOBS processes: its share of the traces; rows as JSON lines for the parent.
  const [index, count] = shard.split('/').map(Number) as [number, number];
  const traces = allTraces().filter((_, i) => i % count === index);
  for (const trace of traces) {
    await compare(trace);
    for (const r of rows.splice(0)) console.log(`ROW ${JSON.stringify(r)}`);
  }
} else {
  console.log(
    `auto vs the fixed delays ${DELAYS.join(', ')} s (writes / churn / idle, each x CNS v2), ` +
      `--fulfil-delay ${FULFIL_DELAY_SECONDS}, batch ${scaler.batchSize}, budgets ${BUDGETS.join(', ')}; ` +
      `${JOBS} processes`,
  );
  const t0 = performance.now();
  const order = allTraces().map((t) => t.name);
  await Promise.all(
    Array.from({ length: JOBS }, (_, i) => {
      const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!], {
        env: { ...process.env, AUTO_BUDGET_SHARD: `${i}/${JOBS}` },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines = createInterface({ input: child.stdout });
      lines.on('line', (line) => {
        if (line.startsWith('ROW ')) rows.push(JSON.parse(line.slice(4)) as Row);
        else console.log(line);
      });
      return new Promise<void>((resolve, reject) =>
        child.on('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`shard ${i}: exit ${code}`)),
        ),
      );
    }),
  );
  rows.sort((a, b) => order.indexOf(a.trace) - order.indexOf(b.trace) || a.budget - b.budget);
  report(rows, performance.now() - t0);
}

function report(all: Row[], ms: number): void {
  const kept = all.filter((r) => r.v.promiseBroken.length === 0).length;
  const onFrontier = all.filter((r) => r.v.frontierMissed.length === 0).length;
  console.log(
    `\n| trace | budget | best fitting delay | its writes / churn / idle x CNS v2 | auto | promise | frontier |`,
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of all) {
    const v = r.v;
    console.log(
      `| ${r.trace} | ${r.budget} | ${v.bestDelay} s | ${f(v.best)} | ${f(v.auto)} | ` +
        `${v.promiseBroken.length === 0 ? 'kept' : `BROKEN (${v.promiseBroken.join(', ')})`} | ` +
        `${v.frontierMissed.length === 0 ? 'within' : `MISSED (${v.frontierMissed.join(', ')})`} |`,
    );
  }
  console.log(
    `\npromise kept ${kept} of ${all.length}; auto within 10 % of the best fitting fixed delay's writes and churn ` +
      `${onFrontier} of ${all.length}; ${(ms / 1000).toFixed(0)} s`,
  );
}
