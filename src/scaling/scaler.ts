// Turns the untrusted `status.scaler` of an NNC into the three numbers the
// scaling function needs. The control plane may send anything (missing,
// zero, negative, non-numeric fields); the node must keep working, so every
// bad field falls back to a safe default and is reported as a warning that
// names it, never as an exception and never as NaN.
import type { ScalerSpec } from '../nnc/types.ts';

/** Azure CNS' ceiling on the IPs one node may hold. */
export const DEFAULT_MAX_IPS = 250;

/** The normalised scaling parameters: integers batch and max, fraction buffer. */
export interface Scaler {
  /** IPs are requested in multiples of this; 1 <= batch <= max. */
  batch: number;
  /** Free IPs to keep, as a fraction of a batch (requestThresholdPercent / 100). */
  buffer: number;
  /** Hard ceiling on the request; 1 <= max <= 250. */
  max: number;
}

export type ScalerField = 'maxIPCount' | 'batchSize' | 'requestThresholdPercent';

export interface ScalerWarning {
  field: ScalerField;
  /** The value received, as received. */
  value: unknown;
  message: string;
}

export interface NormalisedScaler {
  scaler: Scaler;
  warnings: ScalerWarning[];
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/**
 * `max = min(maxIPCount, 250)`, `batch = clamp(batchSize, 1, max)`,
 * `buffer = |requestThresholdPercent| / 100`, with a warning naming each
 * field that was missing or unusable.
 */
export function normaliseScaler(raw: ScalerSpec | undefined | null): NormalisedScaler {
  const warnings: ScalerWarning[] = [];
  const source: Record<string, unknown> =
    raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};

  const rawMax = source.maxIPCount;
  let max = DEFAULT_MAX_IPS;
  if (isFiniteNumber(rawMax) && Math.floor(rawMax) > 0) {
    max = Math.min(Math.floor(rawMax), DEFAULT_MAX_IPS);
  } else {
    warnings.push({
      field: 'maxIPCount',
      value: rawMax,
      message: `maxIPCount ${describe(rawMax)} is not a positive number, using ${DEFAULT_MAX_IPS}`,
    });
  }

  const rawBatch = source.batchSize;
  let batch = 1;
  if (isFiniteNumber(rawBatch) && Math.floor(rawBatch) > 0) {
    batch = Math.min(Math.floor(rawBatch), max);
  } else {
    warnings.push({
      field: 'batchSize',
      value: rawBatch,
      message: `batchSize ${describe(rawBatch)} is not a positive number, using 1`,
    });
  }

  const rawPercent = source.requestThresholdPercent;
  let buffer = 0;
  if (isFiniteNumber(rawPercent)) {
    buffer = Math.abs(rawPercent) / 100;
  } else {
    warnings.push({
      field: 'requestThresholdPercent',
      value: rawPercent,
      message: `requestThresholdPercent ${describe(rawPercent)} is not a number, using 0`,
    });
  }

  return { scaler: { batch, buffer, max }, warnings };
}

/**
 * While the subnet is exhausted the node asks for exactly one spare IP at a
 * time: batch 1, buffer 1 (CNS overrides the scaler locally the same way).
 */
export function applyExhaustion(scaler: Scaler, exhausted: boolean): Scaler {
  return exhausted ? { batch: 1, buffer: 1, max: scaler.max } : scaler;
}

function describe(value: unknown): string {
  if (value === undefined) return '(missing)';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return String(value);
  }
  // Objects from a hostile or broken API server may not even convert to text.
  return `(${typeof value})`;
}
