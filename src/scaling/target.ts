// The idempotent scaling function of Azure CNS IPAM v2:
//   target = min(max, batch × ceil(buffer + demand / batch))
// Pure, and total: any demand (negative, NaN, infinite, fractional) and any
// scaler yields an integer in [0, 250], never NaN.
import { DEFAULT_MAX_IPS, type Scaler } from './scaler.ts';

/** Demand as a pod count: NaN and negatives are 0, fractions round down. */
export function sanitiseDemand(demand: number): number {
  if (Number.isNaN(demand) || demand <= 0) return 0;
  if (!Number.isFinite(demand)) return Number.POSITIVE_INFINITY;
  return Math.floor(demand);
}

/** Clamps a (possibly hand-built) scaler to the ranges normaliseScaler guarantees. */
export function sanitiseScaler(scaler: Scaler): Scaler {
  const maxIn = Number.isFinite(scaler.max) ? Math.floor(scaler.max) : DEFAULT_MAX_IPS;
  const max = Math.min(Math.max(maxIn, 1), DEFAULT_MAX_IPS);
  const batchIn = Number.isFinite(scaler.batch) ? Math.floor(scaler.batch) : 1;
  const batch = Math.min(Math.max(batchIn, 1), max);
  const buffer = Number.isFinite(scaler.buffer) ? Math.abs(scaler.buffer) : 0;
  return { batch, buffer, max };
}

/** Batches needed, ceil(x), tolerant of float noise like 2.0000000000000004. */
function ceilBatches(x: number): number {
  const nearest = Math.round(x);
  return Math.abs(x - nearest) < 1e-9 ? nearest : Math.ceil(x);
}

/** The pool size to request for `demand` pods under `scaler`. */
export function calculateTarget(demand: number, scaler: Scaler): number {
  const { batch, buffer, max } = sanitiseScaler(scaler);
  const pods = sanitiseDemand(demand);
  if (!Number.isFinite(pods)) return max;
  const batches = ceilBatches(buffer + pods / batch);
  // Beyond max the multiplication could overflow to Infinity: clamp first.
  if (batches >= max) return max;
  return Math.min(max, batch * batches);
}
