// Generated demand for checking a promise on shapes nobody designed: a base
// load and a random pattern of 2-5 steps above it (each 2-150 s, 0-70 pods
// over the base), repeated with a little jitter, so that a learning policy
// has gaps to learn and something to hold. Deterministic per seed.
import { seededRandom } from '../random.ts';
import type { Trace, TracePoint } from '../trace-types.ts';

export interface GeneratedShape {
  /** Most repeats of the pattern (at least 4). */
  maxRepeats: number;
}

export function generatedTrace(seed: number, shape: GeneratedShape = { maxRepeats: 25 }): Trace {
  const random = seededRandom(seed);
  const int = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
  const base = int(0, 40);
  const pattern = Array.from({ length: int(2, 5) }, () => ({
    seconds: int(2, 150),
    extra: int(0, 70),
  }));
  const repeats = int(4, Math.max(4, shape.maxRepeats));
  const points: TracePoint[] = [];
  let t = 0;
  for (let r = 0; r < repeats; r += 1) {
    for (const s of pattern) {
      const jitter = int(-3, 3);
      points.push({ t, demand: Math.max(0, base + s.extra + jitter) });
      t += Math.max(1, s.seconds + jitter);
    }
  }
  return {
    name: `generated-${seed}`,
    description: `base ${base} pods, a pattern of ${pattern.length} steps repeated ${repeats} times`,
    points,
    durationSeconds: t + 120,
  };
}
