// Field ownership (metadata.managedFields, FieldsV1), the bookkeeping behind
// server-side apply. Simplified from upstream structured-merge-diff in one
// documented way: lists are atomic (owned whole), maps are owned per key.
// Metadata ownership covers labels and annotations only.
import {
  deepEqual,
  getPath,
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../src/kube/json-object.ts';

/** A field path, e.g. ["spec","requestedIPCount"], encoded as a string for sets. */
export type FieldSet = Set<string>;

export const encodePath = (p: string[]): string => p.join('\u0000');
export const decodePath = (s: string): string[] => s.split('\u0000');

export type FieldScope = 'main' | 'status' | 'all';

/** Leaf paths of an object within a scope: the fields it sets. */
export function fieldSet(obj: JsonObject, scope: FieldScope): FieldSet {
  const out: FieldSet = new Set();
  const walk = (v: Json, path: string[]): void => {
    if (isObject(v) && Object.keys(v).length > 0) {
      for (const [k, child] of Object.entries(v)) walk(child, [...path, k]);
    } else out.add(encodePath(path));
  };
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind') continue;
    if (k === 'metadata') {
      if (scope === 'status' || !isObject(v)) continue;
      for (const mk of ['labels', 'annotations']) {
        const m = v[mk];
        if (isObject(m)) for (const lk of Object.keys(m)) out.add(encodePath(['metadata', mk, lk]));
      }
      continue;
    }
    if (scope === 'status' && k !== 'status') continue;
    if (scope === 'main' && k === 'status') continue;
    walk(v, [k]);
  }
  return out;
}

export function toFieldsV1(set: FieldSet): JsonObject {
  const root: JsonObject = {};
  for (const enc of [...set].sort()) {
    let cur = root;
    for (const seg of decodePath(enc)) {
      const key = `f:${seg}`;
      if (!isObject(cur[key])) cur[key] = {};
      cur = cur[key] as JsonObject;
    }
  }
  return root;
}

export function fromFieldsV1(v: unknown): FieldSet {
  const out: FieldSet = new Set();
  const walk = (node: unknown, path: string[]): void => {
    const keys = isObject(node) ? Object.keys(node).filter((k) => k.startsWith('f:')) : [];
    if (keys.length === 0) {
      if (path.length > 0) out.add(encodePath(path));
      return;
    }
    for (const k of keys) walk((node as JsonObject)[k], [...path, k.slice(2)]);
  };
  walk(v, []);
  return out;
}

export interface ManagerEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource?: string;
  fields: FieldSet;
}

export function readManagers(obj: KObject | undefined): ManagerEntry[] {
  const mf = obj?.metadata.managedFields;
  if (!Array.isArray(mf)) return [];
  return mf.filter(isObject).map((e) => {
    const entry: ManagerEntry = {
      manager: String(e.manager ?? ''),
      operation: e.operation === 'Apply' ? 'Apply' : 'Update',
      apiVersion: String(e.apiVersion ?? ''),
      time: String(e.time ?? ''),
      fields: fromFieldsV1(e.fieldsV1),
    };
    if (typeof e.subresource === 'string' && e.subresource) entry.subresource = e.subresource;
    return entry;
  });
}

export function writeManagers(obj: KObject, entries: ManagerEntry[]): void {
  const kept = entries.filter((e) => e.fields.size > 0);
  if (kept.length === 0) {
    delete obj.metadata.managedFields;
    return;
  }
  obj.metadata.managedFields = kept.map((e) => {
    const out: JsonObject = {
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      time: e.time,
      fieldsType: 'FieldsV1',
      fieldsV1: toFieldsV1(e.fields),
    };
    if (e.subresource) out.subresource = e.subresource;
    return out;
  });
}

/** RFC 3339 to the second, as metav1.Time serialises. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Records a non-apply write (create/update/patch) by `manager`: it takes
 * ownership of every field whose value it changed; fields that disappeared are
 * owned by nobody any more.
 */
export function recordUpdate(
  prev: KObject | undefined,
  next: KObject,
  manager: string,
  apiVersion: string,
  subresource: string | undefined,
  now: Date,
): void {
  const entries = readManagers(prev);
  const scope: FieldScope = subresource === 'status' ? 'status' : 'all';
  const nextSet = fieldSet(next, scope);
  const prevSet = prev ? fieldSet(prev, scope) : new Set<string>();
  const changed: string[] = [];
  for (const p of nextSet) {
    if (!prevSet.has(p) || !deepEqual(getPath(prev, decodePath(p)), getPath(next, decodePath(p))))
      changed.push(p);
  }
  const removed = [...prevSet].filter((p) => !nextSet.has(p));
  if (changed.length === 0 && removed.length === 0 && prev) {
    writeManagers(next, entries);
    return;
  }
  for (const e of entries) {
    for (const p of changed) e.fields.delete(p);
    for (const p of removed) e.fields.delete(p);
  }
  let mine = entries.find(
    (e) => e.manager === manager && e.operation === 'Update' && e.subresource === subresource,
  );
  if (!mine) {
    mine = { manager, operation: 'Update', apiVersion, time: '', fields: new Set() };
    if (subresource) mine.subresource = subresource;
    entries.push(mine);
  }
  mine.time = rfc3339(now);
  mine.apiVersion = apiVersion;
  for (const p of changed) mine.fields.add(p);
  writeManagers(next, entries);
}
