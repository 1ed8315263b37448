// metadata.ownerReferences: what kube-apiserver refuses in them, and how the
// garbage collector reads them.
import type { StatusCause } from './errors.ts';
import { isObject, type Json, type JsonObject, type KObject } from '../../src/kube/json-object.ts';

/** The owner references of an object that are objects (the rest are refused on write). */
export function ownerRefs(obj: KObject): JsonObject[] {
  const refs = obj.metadata.ownerReferences;
  return Array.isArray(refs) ? refs.filter(isObject) : [];
}

/** Group and version of an apiVersion (`v1`, `acn.azure.com/v1alpha`). */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

const str = (v: Json | undefined): string => (typeof v === 'string' ? v : '');

/**
 * The causes kube-apiserver gives for the owner references of an object it
 * refuses with 422: an empty version, kind, name or uid, an Event as owner,
 * or more than one reference with `controller: true`. The fields are not
 * indexed (`metadata.ownerReferences.uid`), as upstream reports them.
 * ValidateOwnerReferences and validateOwnerReference,
 * staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go (messages
 * of 1.30-1.33, which name the field: "uid must not be empty"). A value that
 * is not a string is written as JSON where upstream prints the Go struct.
 */
export function validateOwnerReferences(obj: KObject): StatusCause[] {
  const refs = obj.metadata.ownerReferences;
  if (refs === undefined || refs === null) return [];
  const path = 'metadata.ownerReferences';
  if (!Array.isArray(refs) || !refs.every(isObject))
    return [
      {
        reason: 'FieldValueInvalid',
        field: path,
        message: 'Invalid value: must be a list of owner references',
      },
    ];
  const causes: StatusCause[] = [];
  const bad = (field: string, value: string, why: string): void => {
    causes.push({
      reason: 'FieldValueInvalid',
      field: `${path}${field ? '.' + field : ''}`,
      message: `Invalid value: ${JSON.stringify(value)}: ${why}`,
    });
  };
  let firstController = '';
  for (const ref of refs) {
    const apiVersion = str(ref.apiVersion);
    const kind = str(ref.kind);
    const { group, version } = splitApiVersion(apiVersion);
    if (version === '') bad('apiVersion', apiVersion, 'version must not be empty');
    if (kind === '') bad('kind', kind, 'kind must not be empty');
    if (str(ref.name) === '') bad('name', str(ref.name), 'name must not be empty');
    if (str(ref.uid) === '') bad('uid', str(ref.uid), 'uid must not be empty');
    // BannedOwners: an Event may not own anything.
    if (group === '' && version === 'v1' && kind === 'Event')
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: ${JSON.stringify(ref)}: /v1, Kind=Event is disallowed from being an owner`,
      });
    if (ref.controller === true) {
      const name = `${kind}/${str(ref.name)}`;
      if (firstController === '') firstController = name;
      else
        causes.push({
          reason: 'FieldValueInvalid',
          field: path,
          message: `Invalid value: ${JSON.stringify(refs)}: Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${name}`,
        });
    }
  }
  return causes;
}
