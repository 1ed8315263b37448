// A CustomResourceDefinition as the server stores it: checked that it
// registers a usable resource, and given the status the real server reports.
import { invalid } from './errors.ts';
import { clone, type JsonObject, type KObject } from '../../src/kube/json-object.ts';
import { resourceFromCrd, type ResourceInfo } from './resources.ts';

export function isCrdResource(res: ResourceInfo): boolean {
  return res.group === 'apiextensions.k8s.io' && res.plural === 'customresourcedefinitions';
}

/** Checks a CRD (422 when it registers nothing usable) and sets the status the real server reports. */
export function decorateCrd(crd: KObject): void {
  let info: ResourceInfo;
  try {
    info = resourceFromCrd(crd);
  } catch (err) {
    throw invalid(
      'CustomResourceDefinition',
      'apiextensions.k8s.io',
      String(crd.metadata.name ?? ''),
      [{ reason: 'FieldValueInvalid', field: 'spec', message: (err as Error).message }],
    );
  }
  const spec = crd.spec as JsonObject;
  const time =
    typeof crd.metadata.creationTimestamp === 'string' ? crd.metadata.creationTimestamp : '';
  const cond = (type: string, reason: string, message: string): JsonObject => ({
    type,
    status: 'True',
    lastTransitionTime: time,
    reason,
    message,
  });
  crd.status = {
    acceptedNames: clone(spec.names as JsonObject),
    conditions: [
      cond('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      cond('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    storedVersions: [info.version],
  };
}
