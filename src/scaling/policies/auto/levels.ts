// What the auto policy remembers: for every pool level (a target value the
// CNS v2 formula produced), the gaps it has seen - how long the target stayed
// below that level before it was needed again - and, while the target is below
// it, since when. Pure and bounded: at most MAX_LEVELS levels (targets are
// 0..250) and GAPS_PER_LEVEL gaps each, the oldest dropped first.
import type { Observation } from '../policy.ts';

export const MAX_LEVELS = 256;
export const GAPS_PER_LEVEL = 32;

export interface LevelMemory {
  /** How long (ms) the level stayed unneeded before it was needed again, oldest first. */
  gaps: number[];
  /** When the target fell below this level; absent while the level is needed. */
  since?: number;
  /** How long (ms) the level stayed needed each time, oldest first. */
  busy: number[];
  /** When the level became needed; absent while it is not (or not known). */
  neededSince?: number;
}

export interface LevelsMemory {
  /** The latest target and when it was observed. */
  target?: number;
  at?: number;
  /** Per level (a target value), ascending keys. */
  levels: Map<number, LevelMemory>;
  /** Observations folded in, for explanations. */
  observations: number;
}

export function emptyLevels(): LevelsMemory {
  return { levels: new Map(), observations: 0 };
}

function withLevel(levels: Map<number, LevelMemory>, value: number): void {
  if (levels.has(value)) return;
  if (levels.size >= MAX_LEVELS) {
    // Drop the level seen least: fewest gaps, then highest.
    let worst: number | undefined;
    for (const [v, l] of levels) {
      const w = worst === undefined ? undefined : levels.get(worst);
      if (w === undefined || l.gaps.length < w.gaps.length) worst = v;
    }
    if (worst !== undefined) levels.delete(worst);
  }
  levels.set(value, { gaps: [], busy: [] });
}

/** The memory after one more observation (a new Map; the old memory is untouched). */
export function observeLevels(memory: LevelsMemory, o: Observation): LevelsMemory {
  const prev = memory.target;
  const target = o.target;
  if (prev === target) return { ...memory, at: o.at, observations: memory.observations + 1 };
  const levels = new Map(memory.levels);
  withLevel(levels, target);
  if (prev !== undefined && target < prev) {
    // Levels in (target, prev] are not needed any more: their gap starts now.
    for (const [v, l] of levels) {
      if (v > target && v <= prev && l.since === undefined) {
        const busy =
          l.neededSince === undefined
            ? l.busy
            : [...l.busy, Math.max(0, o.at - l.neededSince)].slice(-GAPS_PER_LEVEL);
        levels.set(v, { gaps: l.gaps, busy, since: o.at });
      }
    }
  } else {
    // Levels up to the new target are needed: a gap ends, a busy time starts.
    for (const [v, l] of levels) {
      if (v > target || l.neededSince !== undefined) continue;
      const gaps =
        l.since === undefined
          ? l.gaps
          : [...l.gaps, Math.max(0, o.at - l.since)].slice(-GAPS_PER_LEVEL);
      levels.set(v, { gaps, busy: l.busy, neededSince: o.at });
    }
  }
  return { target, at: o.at, levels, observations: memory.observations + 1 };
}

/** Levels above `below` and at most `upTo`, ascending. */
export function levelsBetween(
  memory: LevelsMemory,
  below: number,
  upTo: number,
): [number, LevelMemory][] {
  return [...memory.levels.entries()]
    .filter(([v]) => v > below && v <= upTo)
    .sort((a, b) => a[0] - b[0]);
}
