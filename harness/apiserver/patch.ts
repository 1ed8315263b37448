// The three classic patch formats: JSON merge patch (RFC 7386), JSON patch
// (RFC 6902) and strategic merge patch for the built-in types we serve (lists
// merged by their Kubernetes merge keys, in Pods and in the pod templates of
// workloads alike, `$patch`, `$retainKeys`, `$deleteFromPrimitiveList`,
// `$setElementOrder` directives). All pure: they
// return new values and never touch their inputs.
import { ApiError, badRequest } from './errors.ts';
import {
  clone,
  deepEqual,
  isObject,
  type Json,
  type JsonObject,
} from '../../src/kube/json-object.ts';

export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete result[k];
    else result[k] = mergePatch(result[k], v);
  }
  return result;
}

const unprocessable = (msg: string): ApiError => new ApiError(422, 'Invalid', msg);

function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw unprocessable(`invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: Json, parts: string[], path: string): Json {
  let cur: Json = doc;
  for (const p of parts.slice(0, -1)) {
    const next: Json | undefined = Array.isArray(cur)
      ? cur[Number(p)]
      : isObject(cur)
        ? cur[p]
        : undefined;
    if (next === undefined) throw unprocessable(`doc is missing path: "${path}"`);
    cur = next;
  }
  return cur;
}

function readAt(doc: Json, path: string): Json {
  const parts = parsePointer(path);
  if (parts.length === 0) return doc;
  const parent = parentOf(doc, parts, path);
  const last = parts[parts.length - 1] as string;
  const v = Array.isArray(parent)
    ? parent[Number(last)]
    : isObject(parent)
      ? parent[last]
      : undefined;
  if (v === undefined) throw unprocessable(`doc is missing path: "${path}"`);
  return v;
}

function removeAt(doc: Json, path: string): Json {
  const parts = parsePointer(path);
  const parent = parentOf(doc, parts, path);
  const last = parts[parts.length - 1] as string;
  if (Array.isArray(parent)) {
    const i = Number(last);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length)
      throw unprocessable(`Unable to remove nonexistent key: ${last}: missing value`);
    return parent.splice(i, 1)[0] as Json;
  }
  if (!isObject(parent) || !(last in parent))
    throw unprocessable(`Unable to remove nonexistent key: ${last}: missing value`);
  const v = parent[last] as Json;
  delete parent[last];
  return v;
}

function addAt(doc: Json, path: string, value: Json, replace: boolean): Json {
  const parts = parsePointer(path);
  if (parts.length === 0) return value;
  const parent = parentOf(doc, parts, path);
  const last = parts[parts.length - 1] as string;
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : Number(last);
    if (!Number.isInteger(i) || i < 0 || i > parent.length || (replace && i === parent.length))
      throw unprocessable(`index out of range: ${last} in "${path}"`);
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
  } else if (isObject(parent)) {
    if (replace && !(last in parent)) throw unprocessable(`doc is missing key: "${path}"`);
    parent[last] = value;
  } else throw unprocessable(`doc is missing path: "${path}"`);
  return doc;
}

/** Applies an RFC 6902 patch; a malformed patch is 400, one that does not apply is 422. */
export function jsonPatch(target: Json, ops: unknown): Json {
  if (!Array.isArray(ops))
    throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = clone(target);
  for (const op of ops) {
    if (!isObject(op) || typeof op.op !== 'string' || typeof op.path !== 'string')
      throw badRequest('invalid JSON patch operation: each needs "op" and "path"');
    const path = op.path;
    switch (op.op) {
      case 'add':
        if (!('value' in op)) throw badRequest(`missing value for add at "${path}"`);
        doc = addAt(doc, path, clone(op.value as Json), false);
        break;
      case 'replace':
        if (!('value' in op)) throw badRequest(`missing value for replace at "${path}"`);
        doc = addAt(doc, path, clone(op.value as Json), true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'move':
      case 'copy': {
        if (typeof op.from !== 'string') throw badRequest(`missing from for ${op.op}`);
        const v = op.op === 'move' ? removeAt(doc, op.from) : clone(readAt(doc, op.from));
        doc = addAt(doc, path, v, false);
        break;
      }
      case 'test':
        if (!deepEqual(readAt(doc, path), op.value))
          throw unprocessable(`testing value ${path} failed: test failed`);
        break;
      default:
        throw badRequest(`unexpected kind of JSON patch operation: "${String(op.op)}"`);
    }
  }
  return doc;
}

/**
 * Merge keys of the built-in types' lists, by the path of field names from
 * the object root (list items add no segment). Lists not named here are
 * replaced whole, as upstream does for lists without a patch strategy.
 */
const MERGE_KEYS: Record<string, string> = {
  'metadata.ownerReferences': 'uid',
  'spec.containers': 'name',
  'spec.initContainers': 'name',
  'spec.ephemeralContainers': 'name',
  'spec.containers.ports': 'containerPort',
  'spec.initContainers.ports': 'containerPort',
  'spec.containers.env': 'name',
  'spec.initContainers.env': 'name',
  'spec.containers.volumeMounts': 'mountPath',
  'spec.initContainers.volumeMounts': 'mountPath',
  'spec.volumes': 'name',
  'spec.imagePullSecrets': 'name',
  'spec.hostAliases': 'ip',
  'status.conditions': 'type',
  'status.addresses': 'type',
  'status.podIPs': 'ip',
};
/** Lists of primitives merged as sets. */
const MERGE_PRIMITIVES = new Set(['metadata.finalizers']);

/**
 * A workload's pod template (Deployment, DaemonSet: `spec.template`) merges
 * as a Pod does: `spec.template.spec.containers` is keyed like `spec.containers`.
 */
function podPath(path: string): string {
  return path.startsWith('spec.template.') ? path.slice('spec.template.'.length) : path;
}

/** Reorders a merged keyed list as `$setElementOrder` says; items it does not name keep their place after. */
function setElementOrder(list: Json[], order: Json, key: string): Json[] {
  if (!Array.isArray(order)) return list;
  const rank = new Map<string, number>();
  order.forEach((o, i) => {
    if (isObject(o)) rank.set(JSON.stringify(o[key]), i);
  });
  const at = (x: Json): number =>
    isObject(x) ? (rank.get(JSON.stringify(x[key])) ?? Infinity) : Infinity;
  return list
    .map((x, i) => ({ x, i }))
    .sort((a, b) => at(a.x) - at(b.x) || a.i - b.i)
    .map((e) => e.x);
}

function smpList(path: string, target: Json[] | undefined, patch: Json[]): Json[] {
  const key = MERGE_KEYS[podPath(path)];
  if (MERGE_PRIMITIVES.has(path)) {
    const out = [...(target ?? [])];
    for (const v of patch) if (!out.some((x) => deepEqual(x, v))) out.push(clone(v));
    return out;
  }
  if (!key) {
    return patch.filter((p) => !(isObject(p) && p.$patch !== undefined)).map((p) => clone(p));
  }
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObject(p) && p.$patch === 'replace')).map((p) => clone(p));
  }
  const out = (target ?? []).map((x) => x);
  for (const item of patch) {
    if (!isObject(item)) throw badRequest(`list ${path} items must be objects with key "${key}"`);
    const idx = out.findIndex((x) => isObject(x) && deepEqual(x[key], item[key]));
    if (item.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = smpMap(path, out[idx] as JsonObject, item);
    else out.push(smpMap(path, undefined, item));
  }
  return out;
}

function smpMap(path: string, target: JsonObject | undefined, patch: JsonObject): JsonObject {
  if (patch.$patch === 'replace') {
    const rest = { ...patch };
    delete rest.$patch;
    return clone(rest);
  }
  if (patch.$patch === 'delete') return {};
  const result: JsonObject = target ? { ...target } : {};
  const orders: Array<[string, Json]> = [];
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/')) orders.push([k.slice('$setElementOrder/'.length), v]);
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = result[field];
      if (Array.isArray(cur) && Array.isArray(v))
        result[field] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    const childPath = path ? `${path}.${k}` : k;
    if (v === null) delete result[k];
    else if (Array.isArray(v))
      result[k] = smpList(
        childPath,
        Array.isArray(result[k]) ? (result[k] as Json[]) : undefined,
        v,
      );
    else if (isObject(v))
      result[k] = smpMap(childPath, isObject(result[k]) ? (result[k] as JsonObject) : undefined, v);
    else result[k] = v;
  }
  for (const [field, order] of orders) {
    const key = MERGE_KEYS[podPath(path ? `${path}.${field}` : field)];
    if (key && Array.isArray(result[field]))
      result[field] = setElementOrder(result[field] as Json[], order, key);
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys.map(String));
    for (const k of Object.keys(result)) if (!keep.has(k)) delete result[k];
  }
  return result;
}

export function strategicMergePatch(target: JsonObject, patch: Json): JsonObject {
  if (!isObject(patch)) throw badRequest('strategic merge patch must be a JSON object');
  return smpMap('', target, patch);
}
