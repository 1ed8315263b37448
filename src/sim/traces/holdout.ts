// Hold-out traces: shapes the auto policy was NOT designed against, to check
// that it does not only fit the yardsticks. Deterministic: a fixed seed each.
import { seededRandom } from '../random.ts';
import type { Trace, TracePoint } from '../trace-types.ts';
import { churningPods, demandOf, exponential, type PodLife } from './pods.ts';
import { dayCurve } from './yardstick.ts';

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Demand wanders: every 5-30 s it moves by -3..+3 pods, kept within 5..120; six hours. */
export function randomWalk6h(): Trace {
  const random = seededRandom(601);
  const points: TracePoint[] = [{ t: 0, demand: 40 }];
  let demand = 40;
  const step = (): number => 5 + Math.floor(random() * 26);
  for (let t = step(); t < 6 * HOUR; t += step()) {
    demand = Math.min(120, Math.max(5, demand + Math.floor(random() * 7) - 3));
    points.push({ t, demand });
  }
  return {
    name: 'random-walk-6h',
    description: 'demand wandering by up to 3 pods every 5-30 s between 5 and 120, six hours',
    points,
    durationSeconds: 6 * HOUR,
  };
}

/**
 * A steady base of ~20 churning pods, and bursts at random times (every
 * ~15 min on average) of 30-90 pods that stay 2-10 minutes; six hours.
 */
export function poissonBursts6h(): Trace {
  const random = seededRandom(602);
  const pods: PodLife[] = churningPods(random, () => 20, 10 * MINUTE, 6 * HOUR, 20);
  for (
    let t = exponential(random, 15 * MINUTE);
    t < 6 * HOUR;
    t += exponential(random, 15 * MINUTE)
  ) {
    const size = 30 + Math.floor(random() * 61);
    const stay = 2 * MINUTE + random() * 8 * MINUTE;
    for (let i = 0; i < size; i += 1) {
      const start = t + random() * 5;
      pods.push({ start, end: start + stay * (0.8 + 0.4 * random()) });
    }
  }
  return {
    name: 'poisson-bursts-6h',
    description: '~20 churning pods plus bursts of 30-90 pods (2-10 min) every ~15 min, six hours',
    points: demandOf(pods, 6 * HOUR),
    durationSeconds: 6 * HOUR,
  };
}

/** A week, sampled every minute: the day curve on weekdays, 40 % of it at the weekend, with noise. */
export function weekly7d(): Trace {
  const random = seededRandom(603);
  const points: TracePoint[] = [];
  for (let t = 0; t <= 7 * DAY; t += MINUTE) {
    const weekend = Math.floor(t / DAY) >= 5;
    const level = dayCurve(t) * (weekend ? 0.4 : 1);
    const noise = (random() + random() + random() - 1.5) * 2 * Math.sqrt(level);
    points.push({ t, demand: Math.max(0, Math.round(level + noise)) });
  }
  return {
    name: 'weekly-7d',
    description:
      'a week sampled each minute: the day curve on weekdays, 40 % at the weekend, noisy',
    points,
    durationSeconds: 7 * DAY,
  };
}

/** Batch jobs of other sizes: 20-50 pods created at once every 3-8 min, each running 1-4 min; three hours. */
export function batchJobs3h(): Trace {
  const random = seededRandom(604);
  const pods: PodLife[] = [];
  for (let t = 0; t < 3 * HOUR; t += 3 * MINUTE + random() * 5 * MINUTE) {
    const size = 20 + Math.floor(random() * 31);
    for (let i = 0; i < size; i += 1) {
      const start = t + random() * 2;
      pods.push({ start, end: start + MINUTE + random() * 3 * MINUTE });
    }
  }
  return {
    name: 'batch-jobs-3h',
    description:
      'jobs of 20-50 pods created at once every 3-8 min, pods running 1-4 min, three hours',
    points: demandOf(pods, 3 * HOUR),
    durationSeconds: 3 * HOUR,
  };
}

/** 110 pods created one every 18 ms (over 2 s, longer than the 500 ms write window); ten minutes. */
export function slowBurst(): Trace {
  const pods: PodLife[] = Array.from({ length: 110 }, (_, i) => ({
    start: MINUTE + (2 * i) / 110,
    end: Infinity,
  }));
  return {
    name: 'slow-burst-110-11m',
    description: 'an idle node, then 110 pods created evenly over 2 s, held ten minutes',
    points: demandOf(pods),
    durationSeconds: 11 * MINUTE,
  };
}

/**
 * Job waves that come and go fast, over 20 long-running pods: a wave of
 * 30-60 pods every 2-5 min, all created within 10 s, each running 60-90 s;
 * two hours (a hold-out of the idle-budget promise, docs/design/scaling.md#the-goal-table).
 */
export function sharpWaves2h(): Trace {
  const random = seededRandom(2601);
  const pods: PodLife[] = Array.from({ length: 20 }, () => ({ start: 0, end: Infinity }));
  for (let t = MINUTE; t < 2 * HOUR; t += 2 * MINUTE + random() * 3 * MINUTE) {
    const size = 30 + Math.floor(random() * 31);
    for (let i = 0; i < size; i += 1) {
      const start = t + random() * 10;
      pods.push({ start, end: start + MINUTE + random() * 30 });
    }
  }
  return {
    name: 'sharp-waves-2h',
    description:
      '20 steady pods, and waves of 30-60 pods created within 10 s every 2-5 min, each running 60-90 s; two hours',
    points: demandOf(pods, 2 * HOUR),
    durationSeconds: 2 * HOUR + 5 * MINUTE,
  };
}

/** A day of pods arriving as a Poisson process around the day curve, each living ~30 min (a hold-out of the idle-budget promise). */
export function poissonDay24h(): Trace {
  const pods = churningPods(seededRandom(2602), dayCurve, 30 * MINUTE, DAY, 180);
  return {
    name: 'poisson-day-24h',
    description:
      'a day of pods arriving at random around 15 at night and 180 mid-afternoon, each living ~30 min',
    points: demandOf(pods, DAY),
    durationSeconds: DAY,
  };
}

export const HOLDOUT_TRACES: Record<string, () => Trace> = {
  'slow-burst-110-11m': slowBurst,
  'random-walk-6h': randomWalk6h,
  'poisson-bursts-6h': poissonBursts6h,
  'weekly-7d': weekly7d,
  'batch-jobs-3h': batchJobs3h,
  'sharp-waves-2h': sharpWaves2h,
  'poisson-day-24h': poissonDay24h,
};
