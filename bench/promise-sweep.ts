// The idle-budget promise swept wide (docs/decisions/0034): `auto` at
// --idle-budget 1, 1.2, 1.5, 2 and 3 against CNS v2 on the serial control
// plane at the CIDR and the Azure backend's timings (src/sim/fulfil-timing.ts),
// on every built-in trace (each budget and timing) and on RUNS generated
// traces (src/sim/traces/generated.ts, the property test's shape; seed
// FIRST_SEED + i runs budget i mod 5 at timing i / 5 mod 2, so the default
// 6,000 are 600 of each). The promise: idle <= budget x CNS v2 (1 %), writes
// and churn <= CNS v2, pod wait p99 <= CNS v2 + 0.5 s (src/sim/frontier.ts
// `promiseBroken`). Every break is printed with its seed, so a test can pin
// it; the last line counts them, and the exit status is 1 if any broke.
// `make explore-sim` runs it; test/sim/idle-budget.test.ts checks a fixed
// set of the same draw (src/sim/promise-check.ts).
// Env: RUNS (6000), FIRST_SEED (1), BUDGETS, TIMINGS (cidr,azure), BUILT_IN=0
// to skip the built-in traces, JOBS worker processes (2).
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { churn } from '../src/sim/compare.ts';
import { parseFulfilTiming, timingLabel, type FulfilTiming } from '../src/sim/fulfil-timing.ts';
import {
  checkPromise,
  generatedCheck,
  PROMISE_BUDGETS,
  PROMISE_TIMINGS,
  type PromiseOutcome,
} from '../src/sim/promise-check.ts';
import { BUILT_IN_TRACES } from '../src/sim/trace.ts';

const BUDGETS = process.env.BUDGETS?.split(',').map(Number) ?? PROMISE_BUDGETS;
const TIMINGS = process.env.TIMINGS?.split(',').map(parseFulfilTiming) ?? PROMISE_TIMINGS;
const RUNS = Number(process.env.RUNS ?? 6000);
const FIRST_SEED = Number(process.env.FIRST_SEED ?? 1);
const JOBS = Math.max(1, Number(process.env.JOBS ?? 2));
const SPAN =
  process.env.SPEED_SPAN_S !== undefined ? Number(process.env.SPEED_SPAN_S) * 1000 : undefined;

/** One check: a built-in trace at a budget and timing, or a generated seed (its own draw). */
type Task = { builtIn: string; budget: number; timing: FulfilTiming } | { seed: number };

type Outcome = PromiseOutcome & { task: Task; budget: number; timing: FulfilTiming };

async function check(task: Task): Promise<Outcome> {
  const c =
    'seed' in task
      ? generatedCheck(task.seed, BUDGETS, TIMINGS)
      : { trace: BUILT_IN_TRACES[task.builtIn]!(), budget: task.budget, timing: task.timing };
  const spanned = SPAN !== undefined ? { ...c, speedSpanMs: SPAN } : c;
  return { ...(await checkPromise(spanned)), task, budget: c.budget, timing: c.timing };
}

const name = (o: Outcome): string =>
  `${'seed' in o.task ? `generated seed ${o.task.seed}` : o.task.builtIn} at ${o.budget}, ${timingLabel(o.timing)}`;

function describe(o: Outcome): string {
  const { auto: a, cns: c } = o;
  return (
    `BROKEN (${o.broken.join(', ')}): ${name(o)}: idle ${(a.idleIpSeconds / c.idleIpSeconds).toFixed(4)} x, ` +
    `writes ${a.nncWrites} vs ${c.nncWrites}, churn ${churn(a)} vs ${churn(c)}, ` +
    `wait p99 ${a.podWaitP99Seconds} s vs ${c.podWaitP99Seconds} s`
  );
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const tasks: Task[] = [];
  if (process.env.BUILT_IN !== '0') {
    // Longest first, so the 24-hour traces do not end the sweep alone.
    const names = Object.keys(BUILT_IN_TRACES)
      .map((n) => ({ n, points: BUILT_IN_TRACES[n]!().points.length }))
      .sort((a, b) => b.points - a.points)
      .map((x) => x.n);
    for (const builtIn of names) {
      for (const timing of TIMINGS) {
        for (const budget of BUDGETS) tasks.push({ builtIn, budget, timing });
      }
    }
  }
  for (let seed = FIRST_SEED; seed < FIRST_SEED + RUNS; seed += 1) tasks.push({ seed });
  console.log(
    `the idle-budget promise on the serial control plane: ${tasks.length} checks ` +
      `(budgets ${BUDGETS.join(', ')}; timings ${TIMINGS.map(timingLabel).join(', ')}; ` +
      `generated seeds ${FIRST_SEED}-${FIRST_SEED + RUNS - 1}), ${JOBS} worker processes`,
  );
  const broken: Outcome[] = [];
  let done = 0;
  const queue = [...tasks];
  await Promise.all(
    Array.from({ length: Math.min(JOBS, queue.length) }, () => {
      const child = fork(process.argv[1]!, [], {
        execArgv: process.execArgv,
        env: { ...process.env, PROMISE_SWEEP_WORKER: '1' },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const next = (): void => {
        const task = queue.shift();
        if (task === undefined) child.disconnect();
        else child.send(task);
      };
      child.on('message', (o: Outcome) => {
        done += 1;
        if (o.broken.length > 0) {
          broken.push(o);
          console.log(describe(o));
        }
        if (done % 500 === 0) {
          console.log(`  ${done} of ${tasks.length}, ${broken.length} broken`);
        }
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
  const by = (f: string) => broken.filter((o) => o.broken.includes(f)).length;
  console.log(
    `\npromise held in ${tasks.length - broken.length} of ${tasks.length} ` +
      `(broken on idle ${by('idle')}, writes ${by('writes')}, churn ${by('churn')}, wait ${by('wait')}); ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s with ${JOBS} worker processes`,
  );
  if (broken.length > 0) process.exitCode = 1;
}

if (process.env.PROMISE_SWEEP_WORKER === '1') {
  process.on('message', (task: Task) => {
    void check(task).then((o) => process.send!(o));
  });
} else {
  await main();
}
