// Field ownership (metadata.managedFields, FieldsV1), the bookkeeping behind
// server-side apply. Simplified from upstream structured-merge-diff in one
// documented way: lists are atomic (owned whole), maps are owned per key.
// Metadata ownership covers labels and annotations only.
import {
  deepEqual,
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

/**
 * Calls `leaf` with each field an object sets within a scope: its leaf paths
 * (a value that is not a non-empty map) and their values. Paths are built as
 * encoded strings, one concatenation a level.
 */
function eachLeaf(
  obj: JsonObject,
  scope: FieldScope,
  leaf: (path: string, value: Json) => void,
): void {
  const walk = (v: Json, path: string): void => {
    if (isObject(v)) {
      const keys = Object.keys(v);
      if (keys.length > 0) {
        for (const k of keys) walk(v[k] as Json, `${path}\u0000${k}`);
        return;
      }
    }
    leaf(path, v);
  };
  for (const k of Object.keys(obj)) {
    if (k === 'apiVersion' || k === 'kind') continue;
    const v = obj[k] as Json;
    if (k === 'metadata') {
      if (scope === 'status' || !isObject(v)) continue;
      for (const mk of ['labels', 'annotations']) {
        const m = v[mk];
        if (isObject(m))
          for (const lk of Object.keys(m)) leaf(`metadata\u0000${mk}\u0000${lk}`, m[lk] as Json);
      }
      continue;
    }
    if (scope === 'status' && k !== 'status') continue;
    if (scope === 'main' && k === 'status') continue;
    walk(v, k);
  }
}

/** Leaf paths of an object within a scope: the fields it sets. */
export function fieldSet(obj: JsonObject, scope: FieldScope): FieldSet {
  const out: FieldSet = new Set();
  eachLeaf(obj, scope, (path) => out.add(path));
  return out;
}

/**
 * The FieldsV1 objects this server built, with the paths each one holds. One
 * is read back without a walk, and written again as it is while its manager
 * owns the same paths: a status write re-encodes only the entry it changes.
 * They are never changed in place (an entry that changes gets a new one).
 */
const built = new WeakMap<JsonObject, FieldSet>();

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
  built.set(root, new Set(set));
  return root;
}

export function fromFieldsV1(v: unknown): FieldSet {
  const known = isObject(v) ? built.get(v) : undefined;
  if (known) return new Set(known);
  const out: FieldSet = new Set();
  const walk = (node: unknown, path: string, depth: number): void => {
    let leaf = true;
    if (isObject(node)) {
      for (const k of Object.keys(node)) {
        if (!k.startsWith('f:')) continue;
        leaf = false;
        const seg = k.slice(2);
        walk(node[k], depth === 0 ? seg : `${path}\u0000${seg}`, depth + 1);
      }
    }
    if (leaf && depth > 0) out.add(path);
  };
  walk(v, '', 0);
  return out;
}

export interface ManagerEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource?: string;
  fields: FieldSet;
  /** The FieldsV1 object the entry was read from, when this server built it. */
  source?: JsonObject;
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
    if (isObject(e.fieldsV1) && built.has(e.fieldsV1)) entry.source = e.fieldsV1;
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
      fieldsV1:
        e.source && sameSet(built.get(e.source), e.fields) ? e.source : toFieldsV1(e.fields),
    };
    if (e.subresource) out.subresource = e.subresource;
    return out;
  });
}

const sameSet = (a: FieldSet | undefined, b: FieldSet): boolean => {
  if (a === undefined || a.size !== b.size) return false;
  for (const p of b) if (!a.has(p)) return false;
  return true;
};

/** The last second rfc3339 wrote out, and how: most writes land in the same second as the one before. */
let lastSecond = Number.NaN;
let lastText = '';

/** RFC 3339 to the second, as metav1.Time serialises. */
export function rfc3339(d: Date): string {
  const second = Math.floor(d.getTime() / 1000);
  if (second !== lastSecond) {
    lastText = d.toISOString().replace(/\.\d{3}Z$/, 'Z');
    lastSecond = second;
  }
  return lastText;
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
  // prev's leaves; each one next also sets is taken out, so what is left was removed.
  const before = new Map<string, Json>();
  if (prev) eachLeaf(prev, scope, (p, v) => before.set(p, v));
  const changed: string[] = [];
  eachLeaf(next, scope, (p, v) => {
    if (before.has(p)) {
      const was = before.get(p);
      before.delete(p);
      if (deepEqual(was, v)) return;
    }
    changed.push(p);
  });
  const removed = [...before.keys()];
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
