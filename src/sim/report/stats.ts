// Order statistics for the report: pod wait percentiles. Nearest-rank
// percentiles, so every figure printed is a wait some pod actually had.

import { percentile } from '../../scaling/advise/percentile.ts';

export { percentile };

export interface WaitStats {
  count: number;
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  meanMs: number | null;
}

const rounded = (v: number | undefined): number | null => (v === undefined ? null : Math.round(v));

/** Summary of pod waits (scheduling to IP), in whole milliseconds. */
export function waitStats(waitsMs: readonly number[]): WaitStats {
  const mean =
    waitsMs.length === 0 ? undefined : waitsMs.reduce((a, b) => a + b, 0) / waitsMs.length;
  return {
    count: waitsMs.length,
    p50Ms: rounded(percentile(waitsMs, 50)),
    p95Ms: rounded(percentile(waitsMs, 95)),
    p99Ms: rounded(percentile(waitsMs, 99)),
    maxMs: rounded(percentile(waitsMs, 100)),
    meanMs: rounded(mean),
  };
}
