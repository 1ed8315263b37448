// DeleteOptions as kube-apiserver reads them for the garbage collector: the
// propagation policy (Background, Foreground, Orphan) or the legacy
// orphanDependents flag, from the request body or, without a body, from the
// query, and the finalizers a deletion leaves on the object so that the
// garbage collector (garbage-collector.ts) can finish it.
import { badRequest, conflict, invalid } from './errors.ts';
import type { ResourceInfo } from './resources.ts';
import { isObject, type Json, type KObject } from '../../src/kube/json-object.ts';

/** metav1.FinalizerDeleteDependents: the owner waits for its blocking dependents. */
export const FOREGROUND_FINALIZER = 'foregroundDeletion';
/** metav1.FinalizerOrphanDependents: the owner waits until its dependents let go of it. */
export const ORPHAN_FINALIZER = 'orphan';

export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';
const POLICIES: readonly string[] = ['Foreground', 'Background', 'Orphan'];

/** What of a DeleteOptions body the registry acts on. */
export interface DeletePolicy {
  propagationPolicy?: PropagationPolicy;
  orphanDependents?: boolean;
}

/**
 * The DeleteOptions of a DELETE without a body, from its query
 * (propagationPolicy, orphanDependents, gracePeriodSeconds), or undefined
 * when the query has none of them. kube-apiserver decodes the query into
 * DeleteOptions only when the body is empty (DeleteResource,
 * staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go).
 */
export function deleteOptionsFromQuery(q: URLSearchParams): Json | undefined {
  const out: { [k: string]: Json } = {};
  const policy = q.get('propagationPolicy');
  if (policy !== null && policy !== '') out.propagationPolicy = policy;
  const orphan = q.get('orphanDependents');
  if (orphan !== null && orphan !== '') {
    if (orphan !== 'true' && orphan !== 'false')
      throw badRequest(`orphanDependents: invalid boolean value: ${orphan}`);
    out.orphanDependents = orphan === 'true';
  }
  const grace = q.get('gracePeriodSeconds');
  if (grace !== null && grace !== '') {
    const n = Number(grace);
    if (!Number.isInteger(n)) throw badRequest(`gracePeriodSeconds: invalid integer: ${grace}`);
    out.gracePeriodSeconds = n;
  }
  return Object.keys(out).length > 0
    ? { kind: 'DeleteOptions', apiVersion: 'v1', ...out }
    : undefined;
}

/**
 * The policy a DELETE's options ask for; 422 as kube-apiserver's
 * ValidateDeleteOptions (staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/
 * validation/validation.go) for an unknown policy or one set beside
 * orphanDependents.
 */
export function deletePolicy(body: Json | undefined): DeletePolicy {
  if (!isObject(body)) return {};
  const out: DeletePolicy = {};
  const policy = body.propagationPolicy;
  const orphan = body.orphanDependents;
  if (orphan !== undefined && orphan !== null) {
    if (typeof orphan !== 'boolean') throw badRequest('orphanDependents must be a boolean');
    out.orphanDependents = orphan;
  }
  if (policy !== undefined && policy !== null) {
    const p = String(policy);
    if (out.orphanDependents !== undefined)
      throw invalid('DeleteOptions', 'meta.k8s.io', '', [
        {
          reason: 'FieldValueInvalid',
          field: 'propagationPolicy',
          message: `Invalid value: "${p}": orphanDependents and deletionPropagation cannot be both set`,
        },
      ]);
    if (!POLICIES.includes(p))
      throw invalid('DeleteOptions', 'meta.k8s.io', '', [
        {
          reason: 'FieldValueNotSupported',
          field: 'propagationPolicy',
          message: `Unsupported value: "${p}": supported values: "Foreground", "Background", "Orphan", "nil"`,
        },
      ]);
    out.propagationPolicy = p as PropagationPolicy;
  }
  return out;
}

export function finalizersOf(obj: KObject): string[] {
  const f = obj.metadata.finalizers;
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * Whether the dependents are orphaned: an explicit option first, then a
 * finalizer the object already carries, else the kind's default (every kind
 * served here defaults to deleting its dependents). shouldOrphanDependents,
 * staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go.
 */
function orphans(finalizers: string[], p: DeletePolicy): boolean {
  if (p.orphanDependents !== undefined) return p.orphanDependents;
  if (p.propagationPolicy !== undefined) return p.propagationPolicy === 'Orphan';
  for (const f of finalizers) {
    if (f === ORPHAN_FINALIZER) return true;
    if (f === FOREGROUND_FINALIZER) return false;
  }
  return false;
}

/** Whether the dependents go first (shouldDeleteDependents, same file). */
function foreground(finalizers: string[], p: DeletePolicy): boolean {
  if (p.orphanDependents !== undefined) return false;
  if (p.propagationPolicy !== undefined) return p.propagationPolicy === 'Foreground';
  for (const f of finalizers) {
    if (f === FOREGROUND_FINALIZER) return true;
    if (f === ORPHAN_FINALIZER) return false;
  }
  return false;
}

/**
 * The finalizers the object keeps once deleted with `p`: its own, with
 * `orphan` or `foregroundDeletion` as the policy says (never both), and
 * whether that changed them. Without a garbage collector nothing changes, as
 * when kube-apiserver runs with it disabled. deletionFinalizersForGarbageCollection,
 * staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go.
 */
export function deletionFinalizers(
  obj: KObject,
  p: DeletePolicy,
  garbageCollection: boolean,
): { finalizers: string[]; changed: boolean } {
  const current = finalizersOf(obj);
  if (!garbageCollection) return { finalizers: current, changed: false };
  const next = current.filter((f) => f !== ORPHAN_FINALIZER && f !== FOREGROUND_FINALIZER);
  if (orphans(current, p)) next.push(ORPHAN_FINALIZER);
  if (foreground(current, p)) next.push(FOREGROUND_FINALIZER);
  const a = new Set(current);
  const b = new Set(next);
  const same = a.size === b.size && [...a].every((f) => b.has(f));
  return same ? { finalizers: current, changed: false } : { finalizers: next, changed: true };
}

/**
 * Whether a DELETE is answered 202 Accepted rather than 200: when it asked
 * for orphanDependents=false and the object was not deleted at once
 * (DeleteResource, staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go).
 */
export function acceptedDelete(opts: Json | undefined, stillThere: boolean): boolean {
  return isObject(opts) && opts.orphanDependents === false && stillThere;
}

/** DeleteOptions' preconditions: 409 when their uid or resourceVersion is not the stored object's. */
export function checkPreconditions(
  res: ResourceInfo,
  name: string,
  prev: KObject,
  body: Json | undefined,
): void {
  if (isObject(body) && isObject(body.preconditions)) {
    const pre = body.preconditions;
    if (pre.uid !== undefined && pre.uid !== null && pre.uid !== prev.metadata.uid)
      throw conflict(
        res.group,
        res.plural,
        name,
        `Precondition failed: UID in precondition: ${String(pre.uid)}, UID in object meta: ${String(prev.metadata.uid)}`,
      );
    if (
      pre.resourceVersion !== undefined &&
      pre.resourceVersion !== null &&
      pre.resourceVersion !== prev.metadata.resourceVersion
    )
      throw conflict(
        res.group,
        res.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${String(pre.resourceVersion)}, ResourceVersion in object meta: ${String(prev.metadata.resourceVersion)}`,
      );
  }
}
