// The yardstick traces of the goal table
// (docs/design/scaling.md#the-goal-table), each built the way the workload
// would make it (see pods.ts). Deterministic: a fixed seed each.
import { seededRandom } from '../random.ts';
import type { Trace, TracePoint } from '../trace-types.ts';
import { churningPods, demandOf, type PodLife } from './pods.ts';

const MINUTE = 60;
const HOUR = 60 * MINUTE;

/**
 * An idle node, then a Deployment scaled 0 -> 110: the ReplicaSet controller
 * creates pods in slow-start batches (1, 2, 4, 8, 16, 32, then the rest),
 * one batch every 60 ms here; ten minutes at 110.
 */
export function burst110(): Trace {
  const pods: PodLife[] = [];
  let batch = 1;
  for (let at = MINUTE; pods.length < 110; at += 0.06, batch *= 2) {
    const n = Math.min(batch, 110 - pods.length);
    for (let i = 0; i < n; i += 1) pods.push({ start: at, end: Infinity });
  }
  return {
    name: 'burst-110-11m',
    description:
      'an idle node, then 110 pods created in slow-start batches within 0.4 s, held ten minutes',
    points: demandOf(pods),
    durationSeconds: 11 * MINUTE,
  };
}

/** Demand on a batch boundary: 24 and 25 pods, alternating every 10 s for an hour. */
export function flap1h(): Trace {
  const points: TracePoint[] = [];
  for (let t = 0; t < HOUR; t += 10) points.push({ t, demand: (t / 10) % 2 === 0 ? 24 : 25 });
  return {
    name: 'flap-24-25-1h',
    description: 'demand alternating 24 <-> 25 pods every 10 s for an hour (a batch boundary)',
    points,
    durationSeconds: HOUR + 5 * MINUTE,
  };
}

/**
 * A Job every 120 s: its controller creates 60 pods about one a second, each
 * runs about a minute (55-65 s) and completes; two hours.
 */
export function jobWaves2h(): Trace {
  const random = seededRandom(15);
  const pods: PodLife[] = [];
  for (let wave = 0; wave * 120 < 2 * HOUR; wave += 1) {
    for (let i = 0; i < 60; i += 1) {
      const start = wave * 120 + i + random() * 0.5;
      pods.push({ start, end: start + 55 + random() * 10 });
    }
  }
  return {
    name: 'job-waves-2h',
    description: 'a Job of 60 pods every 120 s, created ~1/s, each running ~60 s, for two hours',
    points: demandOf(pods),
    durationSeconds: 2 * HOUR + 5 * MINUTE,
  };
}

/** The day curve of the diurnal traces: 15 pods at night, about 180 mid-afternoon. */
export function dayCurve(t: number): number {
  const day = Math.max(0, Math.sin((Math.PI * ((t % (24 * HOUR)) - 6 * HOUR)) / (12 * HOUR)));
  return 15 + 165 * day;
}

/** A day of pods that come and go (each ~5 min) around the day curve. */
export function diurnalChurn24h(): Trace {
  const pods = churningPods(seededRandom(24), dayCurve, 5 * MINUTE, 24 * HOUR, 180);
  return {
    name: 'diurnal-churn-24h',
    description: 'a day of short-lived pods (~5 min each) around 15 at night and 180 mid-afternoon',
    points: demandOf(pods, 24 * HOUR),
    durationSeconds: 24 * HOUR,
  };
}

export const YARDSTICK_TRACES: Record<string, () => Trace> = {
  'burst-110-11m': burst110,
  'flap-24-25-1h': flap1h,
  'job-waves-2h': jobWaves2h,
  'diurnal-churn-24h': diurnalChurn24h,
};
