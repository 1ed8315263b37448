// Demand traces for `pool-monitor simulate`: a step function of demand (and
// optionally subnet exhaustion) over time. Built-in shapes cover the cases a
// platform team asks about first; a CSV file `seconds,demand[,exhausted]`
// replays a real one.

import { TraceError, type Trace, type TracePoint } from './trace-types.ts';
import { HOLDOUT_TRACES } from './traces/holdout.ts';
import { YARDSTICK_TRACES } from './traces/yardstick.ts';

export { TraceError, type Trace, type TracePoint };

const MINUTE = 60;
const HOUR = 60 * MINUTE;

function burst(): Trace {
  return {
    name: 'burst-20m',
    description: 'idle node, a burst of 120 pods for ten minutes, then back to 10',
    points: [
      { t: 0, demand: 4 },
      { t: 2 * MINUTE, demand: 120 },
      { t: 12 * MINUTE, demand: 10 },
    ],
    durationSeconds: 20 * MINUTE,
  };
}

function oscillation(): Trace {
  const points: TracePoint[] = [];
  // Demand swings between 20 and 80 pods with a ten-minute period, sampled every 15 s.
  for (let t = 0; t <= 2 * HOUR; t += 15) {
    points.push({ t, demand: Math.round(50 + 30 * Math.sin((2 * Math.PI * t) / (10 * MINUTE))) });
  }
  return {
    name: 'oscillation-2h',
    description: 'demand swings between 20 and 80 pods every ten minutes for two hours',
    points,
    durationSeconds: 2 * HOUR + 5 * MINUTE,
  };
}

function jobs(): Trace {
  const points: TracePoint[] = [];
  // A batch of 40 Job pods every five minutes on top of 12 long-running pods;
  // each batch completes after two minutes, and completed pods stop counting.
  for (let wave = 0; wave < 12; wave += 1) {
    const start = wave * 5 * MINUTE;
    points.push({ t: start, demand: 52 }, { t: start + 2 * MINUTE, demand: 12 });
  }
  return {
    name: 'jobs-1h',
    description: 'waves of 40 short Job pods every five minutes over 12 steady pods',
    points,
    durationSeconds: HOUR + 5 * MINUTE,
  };
}

function exhaustion(): Trace {
  return {
    name: 'exhaustion-20m',
    description: 'demand grows while the subnet runs out, then the subnet recovers',
    points: [
      { t: 0, demand: 10, exhausted: false },
      { t: 2 * MINUTE, demand: 40 },
      { t: 5 * MINUTE, demand: 60, exhausted: true },
      { t: 8 * MINUTE, demand: 70 },
      { t: 12 * MINUTE, demand: 70, exhausted: false },
      { t: 15 * MINUTE, demand: 30 },
    ],
    durationSeconds: 20 * MINUTE,
  };
}

function diurnal(): Trace {
  const points: TracePoint[] = [];
  // A day of traffic: a night floor of 15 pods, a day peak near 180, sampled every 10 s,
  // with a small deterministic ripple so demand moves all the time.
  for (let t = 0; t <= 24 * HOUR; t += 10) {
    const day = Math.max(0, Math.sin((Math.PI * (t - 6 * HOUR)) / (12 * HOUR)));
    const ripple = Math.round(3 * Math.sin(t / 37));
    points.push({ t, demand: Math.max(0, Math.round(15 + 165 * day) + ripple) });
  }
  return {
    name: 'diurnal-24h',
    description: 'a 24-hour day: 15 pods at night, about 180 at the afternoon peak',
    points,
    durationSeconds: 24 * HOUR,
  };
}

/**
 * The built-in traces, named with the time they span. Their names never
 * collide with the embedded cluster's scenarios (harness/workload/builtins.ts),
 * which run minutes on many nodes: one name, one workload.
 */
export const BUILT_IN_TRACES: Record<string, () => Trace> = {
  'burst-20m': burst,
  'oscillation-2h': oscillation,
  'jobs-1h': jobs,
  'exhaustion-20m': exhaustion,
  'diurnal-24h': diurnal,
  // The goal table's yardsticks and hold-outs (src/sim/traces/, docs/design/scaling.md#the-goal-table).
  ...YARDSTICK_TRACES,
  ...HOLDOUT_TRACES,
};
export const DEFAULT_TRACE = 'burst-20m';

/** Parses `seconds,demand[,exhausted]` lines; `#` comments and a header line are allowed. */
export function parseTraceCsv(text: string, name = 'csv'): Trace {
  const points: TracePoint[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const cells = line.split(',').map((c) => c.trim());
    if (index === 0 && Number.isNaN(Number(cells[0]))) return; // header
    const where = `${name} line ${index + 1}`;
    if (cells.length < 2 || cells.length > 3) {
      throw new TraceError(`${where}: expected "seconds,demand[,exhausted]", got "${line}"`);
    }
    const t = Number(cells[0]);
    const demand = Number(cells[1]);
    if (!Number.isFinite(t) || t < 0) throw new TraceError(`${where}: bad seconds "${cells[0]}"`);
    if (!Number.isInteger(demand) || demand < 0) {
      throw new TraceError(`${where}: demand must be a non-negative integer, got "${cells[1]}"`);
    }
    const last = points[points.length - 1];
    if (last && t < last.t)
      throw new TraceError(`${where}: seconds go backwards (${t} < ${last.t})`);
    const point: TracePoint = { t, demand };
    if (cells.length === 3) {
      const flag = (cells[2] ?? '').toLowerCase();
      if (!['true', 'false', '1', '0', 'yes', 'no'].includes(flag)) {
        throw new TraceError(`${where}: exhausted must be true or false, got "${cells[2]}"`);
      }
      point.exhausted = ['true', '1', 'yes'].includes(flag);
    }
    points.push(point);
  });
  if (points.length === 0) throw new TraceError(`${name}: no data lines`);
  if ((points[0] as TracePoint).t !== 0) points.unshift({ t: 0, demand: 0 });
  const end = (points[points.length - 1] as TracePoint).t;
  return {
    name,
    description: `${points.length} points from ${name}`,
    points,
    durationSeconds: end + 5 * MINUTE,
  };
}
