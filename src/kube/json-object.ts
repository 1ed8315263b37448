// Small pure helpers on JSON values, shared by the store, patches and apply.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
/** A Kubernetes object as stored: plain JSON with metadata. */
export type KObject = JsonObject & { metadata: JsonObject };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A deep copy; JSON round trip is the fastest for the small objects we hold. */
export function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => deepEqual(ao[k], bo[k]));
}

/** Reads a dotted path (`spec.nodeName`) from an object. */
export function getPath(obj: unknown, path: string | readonly string[]): unknown {
  const parts = typeof path === 'string' ? path.split('.') : path;
  let cur: unknown = obj;
  for (const p of parts) {
    if (!isObject(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}

export function meta(obj: KObject): JsonObject {
  return obj.metadata;
}

export function metaString(obj: KObject, key: string): string | undefined {
  const v = obj.metadata[key];
  return typeof v === 'string' ? v : undefined;
}
