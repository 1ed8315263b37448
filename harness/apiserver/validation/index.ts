// What kube-apiserver checks of a built-in object before it stores it, beyond
// the metadata checks of registry.ts: the decoding of its MicroTime fields
// (400, micro-time.ts), its unknown and duplicate fields under the request's
// fieldValidation (400 or warnings, fields.ts), then the rules of its kind
// (422 causes: workloads.ts, admission-policy.ts). One entry point, called by
// the registry wherever it validates an object about to be written.
import { badRequest, type StatusCause } from '../errors.ts';
import type { KObject } from '../../../src/kube/json-object.ts';
import { resourceKey, type ResourceInfo } from '../resources.ts';
import { validatePolicy, validatePolicyBinding } from './admission-policy.ts';
import type { FieldCheck } from './fields.ts';
import { microTimeDecodeError } from './micro-time.ts';
import { validateWorkload } from './workloads.ts';

export { FieldCheck, directiveOf, type WriteVerb } from './fields.ts';

/** The rules of a built-in kind: the causes of a 422, none when it is valid. */
export function kindRules(
  res: ResourceInfo,
  obj: KObject,
  prev: KObject | undefined,
): StatusCause[] {
  if (res.crdName !== undefined) return [];
  switch (resourceKey(res)) {
    case 'apps/daemonsets':
      return validateWorkload('DaemonSet', obj, prev);
    case 'apps/deployments':
      return validateWorkload('Deployment', obj, prev);
    case 'admissionregistration.k8s.io/validatingadmissionpolicies':
      return validatePolicy(obj);
    case 'admissionregistration.k8s.io/validatingadmissionpolicybindings':
      return validatePolicyBinding(obj);
    default:
      return [];
  }
}

/**
 * Checks an object about to be written, as kube-apiserver decodes and
 * validates it: throws the decoding errors (400), settles its unknown fields
 * (pruned; refused or warned about as the request's fieldValidation says; a
 * write without a FieldCheck, the server's own, refuses them only when
 * `strict`), and returns the causes its kind's rules find.
 */
export function checkWrite(
  res: ResourceInfo,
  obj: KObject,
  prev: KObject | undefined,
  crPruned: string[],
  fields: FieldCheck | undefined,
  strict: boolean,
): StatusCause[] {
  const decodeError = microTimeDecodeError(res, obj);
  if (decodeError) throw decodeError;
  if (fields) fields.settle(res, obj, crPruned);
  else if (strict && crPruned.length > 0)
    throw badRequest(
      `${res.kind} in version "${res.version}" cannot be handled as a ${res.kind}: strict decoding error: ${crPruned
        .map((p) => `unknown field "${p}"`)
        .join(', ')}`,
    );
  return kindRules(res, obj, prev);
}
