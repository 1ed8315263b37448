// The object an update, patch or apply produces from the one it replaces:
// what the write may change (its status, or all but its status), what it may
// not (uid, creation and deletion marks, namespace, name), and the
// generation, bumped only when the spec changed.
import { invalid } from './errors.ts';
import {
  clone,
  deepEqual,
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../src/kube/json-object.ts';
import { apiVersionOf, type ResourceInfo } from './resources.ts';
import { validateObject, type FieldRules } from './object-checks.ts';
import { decorateCrd, isCrdResource } from './crd-status.ts';

/** Everything but metadata and status: what `generation` tracks. */
function specPart(obj: KObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj))
    if (k !== 'metadata' && k !== 'status' && k !== 'apiVersion' && k !== 'kind') out[k] = v;
  return out;
}

/** The object a write produces: status or main part from `next`, the rest and immutable metadata from `prev`. */
export function carryOver(
  res: ResourceInfo,
  prev: KObject,
  next: KObject,
  subresource: string | undefined,
  opts: FieldRules | undefined = undefined,
): KObject {
  let out: KObject;
  if (subresource === 'status') {
    // A stored object is never changed in place (each write builds new
    // objects, sharing what it keeps), so a built-in kind's status write
    // shares the rest of prev. A custom resource is pruned by its schema
    // below, in place: it gets a copy of its own.
    out = res.crdName === undefined ? { ...prev, metadata: { ...prev.metadata } } : clone(prev);
    if (next.status === undefined) delete out.status;
    else out.status = next.status;
  } else {
    // A merge or strategic patch of other fields shares prev's metadata:
    // what follows (and the managed fields after it) writes out's, so it
    // gets its own; a write refused later then leaves prev as it was.
    out = next.metadata === prev.metadata ? { ...next, metadata: { ...next.metadata } } : next;
    if (res.statusSubresource) {
      if (prev.status === undefined) delete out.status;
      else out.status = clone(prev.status);
    }
  }
  const m = out.metadata;
  // A patch or apply that names another uid is refused, not carried over
  // (apimachinery/pkg/api/validation/objectmeta.go, ValidateObjectMetaUpdate:
  // metadata.uid is immutable); an update's uid was its precondition.
  const uid = m.uid;
  if (typeof uid === 'string' && uid !== '' && uid !== prev.metadata.uid)
    throw invalid(res.kind, res.group, String(prev.metadata.name), [
      {
        reason: 'FieldValueInvalid',
        field: 'metadata.uid',
        message: `Invalid value: ${JSON.stringify(uid)}: field is immutable`,
      },
    ]);
  for (const k of [
    'uid',
    'creationTimestamp',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
    'namespace',
    'name',
  ]) {
    if (prev.metadata[k] === undefined) delete m[k];
    else m[k] = prev.metadata[k] as Json;
  }
  out.apiVersion = apiVersionOf(res.group, res.version);
  out.kind = res.kind;
  if (res.generation) {
    const gen = typeof prev.metadata.generation === 'number' ? prev.metadata.generation : 1;
    m.generation = deepEqual(specPart(prev), specPart(out)) ? gen : gen + 1;
  } else delete m.generation;
  validateObject(res, out, opts, prev);
  if (isCrdResource(res)) decorateCrd(out);
  if (
    isCrdResource(res) &&
    isObject(prev.spec) &&
    isObject(out.spec) &&
    prev.spec.group !== out.spec.group
  )
    throw invalid(res.kind, res.group, String(m.name), [
      { field: 'spec.group', message: 'Invalid value: field is immutable' },
    ]);
  return out;
}
