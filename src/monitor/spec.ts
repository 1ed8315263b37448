// Pure helpers about the NNC spec as the monitor sees it: normalising the
// observed spec, stale ids, echo detection, comparison.
import { assignmentsOf, type NetworkContainer, type NodeNetworkConfig } from '../nnc/types.ts';
import type { DesiredSpec } from './ports.ts';

/** Sorted, de-duplicated string ids; anything else dropped. */
export function normaliseIds(ids: unknown): string[] {
  if (!Array.isArray(ids)) return [];
  return [...new Set(ids.filter((id): id is string => typeof id === 'string'))].sort();
}

/** A non-negative integer request; garbage reads as 0. */
export function normaliseRequest(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/**
 * The field of the spec that is malformed (a count that is not a
 * non-negative integer, ids that are not a list of strings), if any. Absent
 * fields are fine.
 */
export function malformedSpecField(nnc: NodeNetworkConfig): string | undefined {
  const spec: unknown = nnc.spec;
  if (spec === undefined || spec === null) return undefined;
  if (typeof spec !== 'object' || Array.isArray(spec)) return 'spec';
  const { requestedIPCount: count, ipsNotInUse: ids } = spec as Record<string, unknown>;
  if (
    count !== undefined &&
    count !== null &&
    !(Number.isSafeInteger(count) && (count as number) >= 0)
  )
    return 'spec.requestedIPCount';
  if (
    ids !== undefined &&
    ids !== null &&
    !(Array.isArray(ids) && ids.every((id) => typeof id === 'string'))
  )
    return 'spec.ipsNotInUse';
  return undefined;
}

/**
 * The observed spec in the shape the monitor writes. A malformed one reads
 * with a count of -1, which no spec the monitor wants has: it is written
 * again, whatever the garbage would otherwise read as.
 */
export function observedSpec(nnc: NodeNetworkConfig): DesiredSpec {
  return {
    requestedIPCount:
      malformedSpecField(nnc) === undefined ? normaliseRequest(nnc.spec?.requestedIPCount) : -1,
    ipsNotInUse: normaliseIds(nnc.spec?.ipsNotInUse),
  };
}

/**
 * The IP ids the status backs (any network container's), sorted. Only these
 * can be given back: a PendingRelease id outside them is stale, whether the
 * observed spec lists it or not, so the spec wanted does not depend on the
 * spec written (it once did, and flipped between the ids and none).
 */
export function backedIds(nnc: NodeNetworkConfig): string[] {
  const backed = new Set<string>();
  const list: unknown = nnc.status?.networkContainers;
  for (const nc of Array.isArray(list) ? (list as NetworkContainer[]) : []) {
    for (const a of assignmentsOf(nc)) if (typeof a.name === 'string') backed.add(a.name);
  }
  return [...backed].sort();
}

export function sameSpec(a: DesiredSpec, b: DesiredSpec): boolean {
  if (a.requestedIPCount !== b.requestedIPCount) return false;
  const x = normaliseIds(a.ipsNotInUse);
  const y = normaliseIds(b.ipsNotInUse);
  return x.length === y.length && x.every((id, i) => id === y[i]);
}

export interface WrittenSpec {
  spec: DesiredSpec;
  generation?: number;
}

export interface ObservedSpec {
  spec: DesiredSpec;
  generation?: number;
}

/**
 * The spec the API server holds, as best known: the observed one, unless it
 * is merely our own write echoing back (or a view older than it). With
 * generations this is exact; without, an observed spec equal to the last one
 * written is taken as the echo.
 */
export function currentSpec(observed: ObservedSpec, written: WrittenSpec | undefined): DesiredSpec {
  if (written === undefined) return observed.spec;
  if (typeof observed.generation === 'number' && typeof written.generation === 'number') {
    return observed.generation <= written.generation ? written.spec : observed.spec;
  }
  return sameSpec(observed.spec, written.spec) ? written.spec : observed.spec;
}

/**
 * How many IPs to mark PendingRelease so that the IPs the NNC backs and that
 * are not PendingRelease (`activeCount`) come down to the request being
 * written: `active − target`, never more than the store can mark
 * (`markableCount`), never below zero. In steady state (active = request)
 * this is exactly −delta, the CNS behaviour; marks a failed write left
 * behind are PendingRelease, so they are not made again; a status that ran
 * ahead of the request, or IPs a capped scale-down could not mark, are
 * given back once they can be (docs/decisions/0004, 0016).
 */
export function releaseCount(
  target: number,
  store: { activeCount: number; markableCount: number },
): number {
  const n = Math.min(store.activeCount - target, store.markableCount);
  return Number.isFinite(n) ? Math.max(0, Math.floor(n)) : 0;
}
