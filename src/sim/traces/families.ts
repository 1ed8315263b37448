// Generated trace families for checking `auto` against the fixed delays on
// shapes it was not tuned on (docs/decisions/0034, bench/auto-budget.ts):
// Poisson arrivals with exponential and with heavy-tailed (Pareto)
// lifetimes, diurnal rates, bursts and waves. Each family draws its
// parameters from a seed, so a seed names one trace for good.
import { seededRandom } from '../random.ts';
import type { Trace } from '../trace-types.ts';
import { churningPods, demandOf, exponential, type PodLife } from './pods.ts';

const MINUTE = 60;

const hours = (seconds: number): string => `${Number((seconds / 3600).toFixed(2))} h`;

export type FamilyName = 'poisson-exp' | 'poisson-pareto' | 'diurnal' | 'bursts' | 'waves';

export const FAMILIES: readonly FamilyName[] = [
  'poisson-exp',
  'poisson-pareto',
  'diurnal',
  'bursts',
  'waves',
];

/** A Pareto duration with shape `alpha` (> 1) and the given mean: heavy-tailed lifetimes. */
export function pareto(random: () => number, mean: number, alpha: number): number {
  const scale = (mean * (alpha - 1)) / alpha;
  return scale / Math.pow(1 - random(), 1 / alpha);
}

/** Pods arriving at a constant Poisson rate with `life` lifetimes, about `level` alive. */
function poissonPods(
  random: () => number,
  level: number,
  meanLife: number,
  until: number,
  life: () => number,
): PodLife[] {
  const pods: PodLife[] = [];
  for (let i = 0; i < level; i += 1) pods.push({ start: 0, end: life() });
  const rate = level / meanLife;
  for (let t = exponential(random, 1 / rate); t < until; t += exponential(random, 1 / rate)) {
    pods.push({ start: t, end: t + life() });
  }
  return pods;
}

function named(
  family: FamilyName,
  seed: number,
  description: string,
  pods: PodLife[],
  until: number,
): Trace {
  return {
    name: `${family}-${seed}`,
    description,
    points: demandOf(pods, until),
    durationSeconds: until,
  };
}

/**
 * One trace of a family, deterministic per seed. `scale` shortens (or
 * lengthens) its span: tests run a fraction of an hour, the bench the whole.
 */
export function familyTrace(family: FamilyName, seed: number, scale = 1): Trace {
  const HOUR = 3600 * scale;
  const random = seededRandom(7000 + seed * 31 + FAMILIES.indexOf(family));
  const int = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
  switch (family) {
    case 'poisson-exp': {
      const level = int(10, 120);
      const life = int(2, 40) * MINUTE;
      const until = 4 * HOUR;
      const pods = poissonPods(random, level, life, until, () => exponential(random, life));
      return named(
        family,
        seed,
        `Poisson arrivals, ~${level} pods alive, exponential lifetimes of mean ${life / MINUTE} min; ${hours(until)}`,
        pods,
        until,
      );
    }
    case 'poisson-pareto': {
      const level = int(10, 120);
      const life = int(2, 40) * MINUTE;
      const alpha = 1.2 + random() * 0.8;
      const until = 4 * HOUR;
      const pods = poissonPods(random, level, life, until, () => pareto(random, life, alpha));
      return named(
        family,
        seed,
        `Poisson arrivals, ~${level} pods alive, Pareto lifetimes (alpha ${alpha.toFixed(2)}) of mean ${life / MINUTE} min; ${hours(until)}`,
        pods,
        until,
      );
    }
    case 'diurnal': {
      const low = int(5, 40);
      const high = low + int(40, 180);
      const life = int(5, 60) * MINUTE;
      const until = 24 * HOUR;
      const phase = random() * until;
      const curve = (t: number): number =>
        low + ((high - low) * (1 + Math.sin((2 * Math.PI * (t - phase)) / until))) / 2;
      const pods = churningPods(random, curve, life, until, high);
      return named(
        family,
        seed,
        `${hours(until)} between ~${low} and ~${high} pods, Poisson arrivals, exponential lifetimes of mean ${life / MINUTE} min`,
        pods,
        until,
      );
    }
    case 'bursts': {
      const base = int(5, 40);
      const every = int(5, 40) * MINUTE;
      const until = 6 * HOUR;
      const pods = poissonPods(random, base, 15 * MINUTE, until, () =>
        exponential(random, 15 * MINUTE),
      );
      for (let t = exponential(random, every); t < until; t += exponential(random, every)) {
        const size = int(10, 100);
        const stay = int(1, 20) * MINUTE;
        for (let i = 0; i < size; i += 1) {
          const start = t + random() * 10;
          pods.push({ start, end: start + stay * (0.5 + random()) });
        }
      }
      return named(
        family,
        seed,
        `~${base} churning pods and bursts of 10-100 pods every ~${every / MINUTE} min (Poisson), 1-20 min each; ${hours(until)}`,
        pods,
        until,
      );
    }
    case 'waves': {
      const base = int(0, 30);
      const period = int(1, 15) * MINUTE;
      const size = int(16, 90);
      const run = period * (0.2 + random() * 0.6);
      const until = 3 * HOUR;
      const pods: PodLife[] = Array.from({ length: base }, () => ({ start: 0, end: Infinity }));
      for (let t = MINUTE; t < until; t += period * (0.7 + random() * 0.6)) {
        const n = Math.round(size * (0.7 + random() * 0.6));
        for (let i = 0; i < n; i += 1) {
          const start = t + random() * 15;
          pods.push({ start, end: start + run * (0.6 + random() * 0.8) });
        }
      }
      return named(
        family,
        seed,
        `${base} steady pods, waves of ~${size} pods every ~${(period / MINUTE).toFixed(0)} min running ~${Math.round(run)} s; ${hours(until)}`,
        pods,
        until,
      );
    }
  }
}
