// The patch verb's content types: the one a request names (415 for any
// other), and the object a classic patch (JSON, merge, strategic merge)
// makes of the stored one; server-side apply is apply.ts.
import { ApiError, badRequest, conflict, unsupportedMediaType } from './errors.ts';
import { isObject, type Json, type KObject } from '../../src/kube/json-object.ts';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.ts';
import type { ResourceInfo } from './resources.ts';

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** The parsed patch content type, or 415. */
export function patchTypeOf(contentType: string | undefined): string {
  const ct = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if ((Object.values(PATCH_TYPES) as string[]).includes(ct)) return ct;
  throw unsupportedMediaType(ct || '(none)');
}

/** The object a JSON, merge or strategic merge patch makes of `prev`, checked as a patch result. */
export function patchedObject(
  res: ResourceInfo,
  prev: KObject,
  name: string,
  contentType: string,
  body: Json,
): KObject {
  let patched: Json;
  switch (contentType) {
    case PATCH_TYPES.json:
      patched = jsonPatch(prev, body);
      break;
    case PATCH_TYPES.merge:
      if (!isObject(body)) throw badRequest('merge patch must be a JSON object');
      patched = mergePatch(prev, body);
      break;
    case PATCH_TYPES.strategic:
      if (!res.strategicMerge) throw unsupportedMediaType(contentType);
      patched = strategicMergePatch(prev, body);
      break;
    default:
      throw unsupportedMediaType(contentType);
  }
  if (!isObject(patched) || !isObject(patched.metadata))
    throw new ApiError(422, 'Invalid', 'the patch removed metadata');
  const next = patched as KObject;
  // A resourceVersion the patch sets is a precondition, as for a PUT: 409
  // when it is not the stored one (kubernetes/kubernetes#15416, and the
  // test-cmd case of #15420 that a patch with another version is refused).
  if (
    next.metadata.resourceVersion !== undefined &&
    next.metadata.resourceVersion !== prev.metadata.resourceVersion
  )
    throw conflict(
      res.group,
      res.plural,
      name,
      'the object has been modified; please apply your changes to the latest version and try again',
    );
  if (next.metadata.name !== name)
    throw badRequest('the name of the object cannot be changed by a patch');
  if (next.kind !== undefined && next.kind !== res.kind)
    throw badRequest('the kind of the object cannot be changed by a patch');
  return next;
}
