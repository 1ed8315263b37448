// Issue 15's goal table for `--release-delay auto`: each yardstick trace run
// through CNS v2 (`--release-delay 0`) and auto in one run (--fulfil-delay 2,
// batch 16, the product's own simulate path), every figure printed next to
// its goal with PASS or FAIL; then the hold-out traces, held to doing no harm
// (writes and churn <= CNS v2) and pod wait p99 <= CNS v2 + 0.5 s. The goals
// live in src/sim/goals.ts. Figures are what the runs measure; nothing here
// is tuned per trace. About a minute of CPU (the 24-h and 7-day traces).
// Run: node bench/release-policy.ts (TRACES=a,b to choose traces).
import { performance } from 'node:perf_hooks';
import { runComparison } from '../src/sim/compare.ts';
import {
  checkGoals,
  FIGURES,
  HOLDOUT_GOALS,
  verdictCell,
  YARDSTICK_GOALS,
  type Goal,
  type Verdict,
} from '../src/sim/goals.ts';
import { BUILT_IN_TRACES } from '../src/sim/trace.ts';
import { HOLDOUT_TRACES } from '../src/sim/traces/holdout.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const FULFIL_DELAY_SECONDS = 2;
const only = process.env.TRACES?.split(',');
const chosen = (names: string[]) => names.filter((n) => !only || only.includes(n));

const HEAD: Record<string, string> = {
  writes: 'writes',
  churn: 'IP churn',
  idle: 'idle IP-seconds',
  waitP99: 'pod wait p99',
};

async function measure(name: string, goals: readonly Goal[]): Promise<Verdict[]> {
  const make = BUILT_IN_TRACES[name];
  if (!make) throw new Error(`unknown trace ${name}`);
  const started = performance.now();
  const c = await runComparison({
    trace: make(),
    scaler,
    fulfilDelaySeconds: FULFIL_DELAY_SECONDS,
    only: ['cns-v2', 'auto'],
  });
  const [cns, auto] = c.rows;
  const verdicts = checkGoals(goals, auto!.summary, cns!.summary);
  const ms = performance.now() - started;
  console.log(`\n${name} (${c.trace.description}; ${(ms / 1000).toFixed(1)} s)`);
  for (const figure of FIGURES) {
    const v = verdicts.find((x) => x.figure === figure);
    if (v) console.log(`  ${HEAD[figure]!.padEnd(16)} auto ${verdictCell(v)}`);
  }
  return verdicts;
}

function table(rows: Array<[string, Verdict[]]>): string {
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
  `auto vs CNS v2 (--release-delay 0), --fulfil-delay ${FULFIL_DELAY_SECONDS}, batch ${scaler.batchSize}`,
);
const yardstick: Array<[string, Verdict[]]> = [];
for (const name of chosen(Object.keys(YARDSTICK_GOALS)))
  yardstick.push([name, await measure(name, YARDSTICK_GOALS[name]!)]);
const holdout: Array<[string, Verdict[]]> = [];
for (const name of chosen(Object.keys(HOLDOUT_TRACES)))
  holdout.push([name, await measure(name, HOLDOUT_GOALS)]);

const all = [...yardstick, ...holdout].flatMap(([, v]) => v).filter((v) => v.hasGoal);
console.log('\nGoal table (issue 15), auto: figure (ratio to CNS v2; goal) mark');
console.log(table(yardstick));
console.log(
  '\nHold-out traces: no harm (<= 1 x CNS v2 writes and churn), wait p99 <= CNS v2 + 0.5 s',
);
console.log(table(holdout));
console.log(`\ngoals met: ${all.filter((v) => v.met).length} of ${all.length}`);
