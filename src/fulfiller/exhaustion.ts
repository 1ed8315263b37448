// Subnet exhaustion with hysteresis: a subnet becomes exhausted when its free
// addresses drop below the threshold and recovers only once they reach the
// (higher) recovery level, so a subnet hovering at the edge does not make
// every node's sidecar flip between batch sizes on each allocation.

export interface ExhaustionLevels {
  /** Exhausted when free < threshold. */
  threshold: number;
  /** Not exhausted again until free >= recoverAt (>= threshold). */
  recoverAt: number;
}

/** The next exhausted flag for `free` addresses, given the previous one. */
export function nextExhausted(
  previous: boolean | undefined,
  free: number,
  levels: ExhaustionLevels,
): boolean {
  if (free < levels.threshold) return true;
  if (previous === true) return free < Math.max(levels.recoverAt, levels.threshold);
  return false;
}

/** Levels from a threshold: recovery one margin above it (the batch size by default). */
export function exhaustionLevels(threshold: number, margin: number): ExhaustionLevels {
  return { threshold, recoverAt: threshold + Math.max(0, margin) };
}
