// The goal table for `--release-delay auto` and the idle-budget promise
// (docs/design/scaling.md#the-goal-table). Every trace runs through CNS v2
// (`--release-delay 0`) once and through auto at --idle-budget 1.2, 1.5 (the
// default) and 2.0 (--fulfil-delay 2, batch 16, the product's own simulate
// path).
// 1. The goal table: the yardsticks at the default budget, every figure next
//    to its goal with PASS or FAIL; the hold-outs held to doing no harm.
// 2. The budget table: on every built-in trace, writes, churn and idle as
//    ratios to CNS v2 at each budget, and the promise checked: idle <= budget
//    x CNS v2 (1 % slack), writes and churn <= CNS v2, pod wait p99 <= CNS v2
//    + 0.5 s.
// 3. The same promise on generated traces (src/sim/traces/generated.ts).
// The goals live in src/sim/goals.ts. Figures are what the runs measure;
// nothing here is tuned per trace. A few minutes of CPU (the 24-h and 7-day
// traces four times each). Run: node bench/release-policy.ts (TRACES=a,b to
// choose traces, GENERATED=n generated traces, default 30).
import { performance } from 'node:perf_hooks';
import { autoPolicy } from '../src/scaling/policies/auto/auto.ts';
import { DEFAULT_IDLE_BUDGET, withIdleBudget } from '../src/scaling/policies/budget/idle-budget.ts';
import { cnsV2Policy } from '../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../src/scaling/policies/policy.ts';
import { churn } from '../src/sim/compare.ts';
import {
  checkGoals,
  FIGURES,
  HOLDOUT_GOALS,
  verdictCell,
  YARDSTICK_GOALS,
  type Goal,
  type Verdict,
} from '../src/sim/goals.ts';
import { runSimulation } from '../src/sim/simulate.ts';
import type { SimulationSummary } from '../src/sim/summary.ts';
import { BUILT_IN_TRACES, type Trace } from '../src/sim/trace.ts';
import { generatedTrace } from '../src/sim/traces/generated.ts';
import { HOLDOUT_TRACES } from '../src/sim/traces/holdout.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const FULFIL_DELAY_SECONDS = 2;
const BUDGETS = [1.2, DEFAULT_IDLE_BUDGET, 2.0];
const only = process.env.TRACES?.split(',');
const chosen = (names: string[]) => names.filter((n) => !only || only.includes(n));
const GENERATED = Number(process.env.GENERATED ?? 30);

const HEAD: Record<string, string> = {
  writes: 'writes',
  churn: 'IP churn',
  idle: 'idle IP-seconds',
  waitP99: 'pod wait p99',
};

interface Runs {
  cns: SimulationSummary;
  /** auto's summary per budget. */
  auto: Map<number, SimulationSummary>;
}

async function runAll(trace: Trace, fulfilDelaySeconds = FULFIL_DELAY_SECONDS): Promise<Runs> {
  const run = async (policy: AnyPolicy) =>
    (await runSimulation({ trace, scaler, releaseDelaySeconds: 0, policy, fulfilDelaySeconds }))
      .summary;
  const cns = await run(cnsV2Policy());
  const auto = new Map<number, SimulationSummary>();
  for (const b of BUDGETS) auto.set(b, await run(withIdleBudget(autoPolicy(), b)));
  return { cns, auto };
}

/** The idle-budget promise at one budget; the names of the figures that break it. */
function promiseBroken(budget: number, a: SimulationSummary, c: SimulationSummary): string[] {
  const broken: string[] = [];
  if (a.idleIpSeconds > budget * c.idleIpSeconds * 1.01) broken.push('idle');
  if (a.nncWrites > c.nncWrites) broken.push('writes');
  if (churn(a) > churn(c)) broken.push('churn');
  if (a.podWaitP99Seconds > c.podWaitP99Seconds + 0.5) broken.push('wait');
  return broken;
}

const ratio = (a: number, b: number): string =>
  b === 0 ? (a === 0 ? '1.00' : 'inf') : (a / b).toFixed(2);

function budgetCell(budget: number, r: Runs): string {
  const a = r.auto.get(budget)!;
  const broken = promiseBroken(budget, a, r.cns);
  return (
    `${ratio(a.nncWrites, r.cns.nncWrites)} / ${ratio(churn(a), churn(r.cns))} / ` +
    `${ratio(a.idleIpSeconds, r.cns.idleIpSeconds)}` +
    (broken.length === 0 ? '' : ` BROKEN (${broken.join(', ')})`)
  );
}

function goalTable(rows: Array<[string, Verdict[]]>): string {
  const lines = [
    `| trace | ${FIGURES.map((f) => HEAD[f]).join(' | ')} |`,
    `|---|${FIGURES.map(() => '---').join('|')}|`,
  ];
  for (const [name, verdicts] of rows) {
    const cells = FIGURES.map((f) => {
      const v = verdicts.find((x) => x.figure === f);
      return v ? verdictCell(v) : '-';
    });
    lines.push(`| ${name} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

console.log(
  `auto vs CNS v2 (--release-delay 0), --fulfil-delay ${FULFIL_DELAY_SECONDS}, batch ${scaler.batchSize}, ` +
    `--idle-budget ${BUDGETS.join(', ')}`,
);
const runs = new Map<string, Runs>();
for (const name of chosen(Object.keys(BUILT_IN_TRACES))) {
  const started = performance.now();
  const trace = BUILT_IN_TRACES[name]!();
  const r = await runAll(trace);
  runs.set(name, r);
  const ms = performance.now() - started;
  console.log(
    `${name} (${(ms / 1000).toFixed(1)} s): CNS v2 ${r.cns.nncWrites} writes, ${churn(r.cns)} churn, ` +
      `${r.cns.idleIpSeconds} idle IP-s; auto at ${BUDGETS.map((b) => `${b}: ${budgetCell(b, r)}`).join('; ')}`,
  );
}

const goalRows = (names: string[], goals: (n: string) => Goal[]): Array<[string, Verdict[]]> =>
  names
    .filter((n) => runs.has(n))
    .map((n) => {
      const r = runs.get(n)!;
      return [n, checkGoals(goals(n), r.auto.get(DEFAULT_IDLE_BUDGET)!, r.cns)];
    });
const yardstick = goalRows(Object.keys(YARDSTICK_GOALS), (n) => YARDSTICK_GOALS[n]!);
const holdout = goalRows(Object.keys(HOLDOUT_TRACES), () => HOLDOUT_GOALS);
const goals = [...yardstick, ...holdout].flatMap(([, v]) => v).filter((v) => v.hasGoal);
console.log(
  `\nGoal table (docs/design/scaling.md), auto at --idle-budget ${DEFAULT_IDLE_BUDGET}: figure (ratio to CNS v2; goal) mark`,
);
console.log(goalTable(yardstick));
console.log(
  '\nHold-out traces: no harm (<= 1 x CNS v2 writes and churn), wait p99 <= CNS v2 + 0.5 s',
);
console.log(goalTable(holdout));
console.log(`\ngoals met: ${goals.filter((v) => v.met).length} of ${goals.length}`);

console.log(
  '\nIdle budget promise: auto as writes / churn / idle, each x CNS v2; BROKEN when idle > budget x CNS v2 (1 %), ' +
    'writes or churn > CNS v2, or wait p99 > CNS v2 + 0.5 s',
);
console.log(`| trace | ${BUDGETS.map((b) => `budget ${b}`).join(' | ')} |`);
console.log(`|---|${BUDGETS.map(() => '---').join('|')}|`);
for (const [name, r] of runs) {
  console.log(`| ${name} | ${BUDGETS.map((b) => budgetCell(b, r)).join(' | ')} |`);
}
let kept = 0;
let checked = 0;
for (const [, r] of runs) {
  for (const b of BUDGETS) {
    checked += 1;
    if (promiseBroken(b, r.auto.get(b)!, r.cns).length === 0) kept += 1;
  }
}
console.log(`promise kept on built-in traces: ${kept} of ${checked}`);

if (GENERATED > 0) {
  const started = performance.now();
  let genKept = 0;
  let genChecked = 0;
  let worstIdle = 0;
  let heldMore = 0;
  const broken: string[] = [];
  for (let seed = 1; seed <= GENERATED; seed += 1) {
    const fulfil = [1, 2, 5][seed % 3]!;
    const r = await runAll(generatedTrace(seed), fulfil);
    for (const b of BUDGETS) {
      const a = r.auto.get(b)!;
      genChecked += 1;
      const ratioIdle = a.idleIpSeconds / Math.max(1, r.cns.idleIpSeconds);
      worstIdle = Math.max(worstIdle, ratioIdle / b);
      if (ratioIdle > 1.01) heldMore += 1;
      const why = promiseBroken(b, a, r.cns);
      if (why.length === 0) genKept += 1;
      else broken.push(`generated-${seed} (fulfil ${fulfil} s) at ${b}: ${why.join(', ')}`);
    }
  }
  console.log(
    `\nGenerated traces (${GENERATED}, seeds 1-${GENERATED}, fulfil delay 1/2/5 s; ${((performance.now() - started) / 1000).toFixed(1)} s): ` +
      `promise kept ${genKept} of ${genChecked}; auto held more idle than CNS v2 in ${heldMore}; ` +
      `highest idle as a share of its budget ${worstIdle.toFixed(3)}`,
  );
  for (const b of broken) console.log(`  BROKEN ${b}`);
}
