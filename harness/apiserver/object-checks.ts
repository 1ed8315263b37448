// The checks a written object passes before it is stored, as kube-apiserver
// makes them: the body's shape against the request (kind, apiVersion,
// namespace, name), then the object's own validation (names, labels and
// annotations, owner references, finalizers, a CRD's schema, the kind's rules).
import { badRequest, invalid, type StatusCause } from './errors.ts';
import { isObject, type Json, type KObject } from '../../src/kube/json-object.ts';
import { apiVersionOf, type ResourceInfo } from './resources.ts';
import { validateCustomResource } from './schema.ts';
import { finalizersOf } from './delete-options.ts';
import { validateOwnerReferences } from './owner-references.ts';
import { checkWrite, type FieldCheck } from './validation/index.ts';

/** What of a write's options its validation reads. */
export interface FieldRules {
  /** fieldValidation=Strict: unknown fields are rejected (400) instead of pruned. */
  strict?: boolean;
  /** The request's field validation (validation/fields.ts). */
  fields?: FieldCheck;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Common shape checks of a body naming an object of `res`. */
export function checkBody(
  res: ResourceInfo,
  body: Json,
  ns: string | undefined,
  name?: string,
): KObject {
  if (!isObject(body)) throw badRequest('the body of the request must be a JSON/YAML object');
  if (body.metadata !== undefined && !isObject(body.metadata))
    throw badRequest('metadata must be an object');
  const obj = body as KObject;
  if (!obj.metadata) obj.metadata = {};
  const kind = obj.kind;
  if (kind !== undefined && kind !== res.kind)
    throw badRequest(
      `the kind of the object (${String(kind)}) does not match the resource (${res.kind})`,
    );
  if (
    obj.apiVersion !== undefined &&
    !res.versions.some((v) => apiVersionOf(res.group, v) === obj.apiVersion)
  )
    throw badRequest(
      `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersionOf(res.group, res.version)})`,
    );
  if (res.namespaced) {
    const bodyNs = obj.metadata.namespace;
    if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== ns)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    obj.metadata.namespace = ns as string;
  } else delete obj.metadata.namespace;
  if (name !== undefined && obj.metadata.name !== undefined && obj.metadata.name !== name)
    throw badRequest(
      'the name of the object (' +
        String(obj.metadata.name) +
        ') does not match the name on the URL (' +
        name +
        ')',
    );
  if (name !== undefined) obj.metadata.name = name;
  obj.apiVersion = apiVersionOf(res.group, res.version);
  obj.kind = res.kind;
  return obj;
}

export function validateObject(
  res: ResourceInfo,
  obj: KObject,
  opts: { strict?: boolean; fields?: FieldCheck } = {},
  prev?: KObject,
): void {
  const causes: StatusCause[] = [];
  const name = obj.metadata.name;
  if (typeof name !== 'string' || name === '')
    causes.push({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value: name or generateName is required',
    });
  else if (res.group === 'rbac.authorization.k8s.io') {
    // RBAC names are path segments (system:discovery), as upstream validates them.
    if (name === '.' || name === '..' || /[/%]/.test(name))
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.name',
        message: `Invalid value: "${name}": may not be '.' or '..' or contain '/' or '%'`,
      });
  } else if (
    name.length > 253 ||
    !(res.plural === 'namespaces' ? DNS1123_LABEL : DNS1123_SUBDOMAIN).test(name)
  )
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.name',
      message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    });
  for (const mk of ['labels', 'annotations']) {
    const m = obj.metadata[mk];
    if (m === undefined) continue;
    if (!isObject(m) || Object.values(m).some((v) => typeof v !== 'string'))
      causes.push({
        reason: 'FieldValueInvalid',
        field: `metadata.${mk}`,
        message: 'Invalid value: must be a map of strings',
      });
  }
  causes.push(...validateOwnerReferences(obj));
  if (prev) causes.push(...noNewFinalizers(prev, obj));
  const pruned: string[] = [];
  if (res.schema) causes.push(...validateCustomResource(obj, res.schema, pruned));
  // Decoding, unknown fields and the kind's own rules, as kube-apiserver (validation/).
  causes.push(...checkWrite(res, obj, prev, pruned, opts.fields, opts.strict === true));
  if (causes.length > 0) throw invalid(res.kind, res.group, String(name ?? ''), causes);
}

/**
 * An object being deleted takes no new finalizer, as apimachinery's
 * ValidateObjectMetaUpdate refuses it (ValidateNoNewFinalizers,
 * k8s.io/apimachinery/pkg/api/validation/objectmeta.go): otherwise a
 * finalizer could keep it forever after its deletion was asked.
 */
function noNewFinalizers(prev: KObject, next: KObject): StatusCause[] {
  if (prev.metadata.deletionTimestamp === undefined) return [];
  const old = new Set(finalizersOf(prev));
  // Go's sets.String.List(): sorted, without duplicates.
  const extra = [...new Set(finalizersOf(next).filter((f) => !old.has(f)))].sort();
  if (extra.length === 0) return [];
  return [
    {
      reason: 'FieldValueForbidden',
      field: 'metadata.finalizers',
      message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${extra.map((f) => JSON.stringify(f)).join(', ')}}`,
    },
  ];
}
