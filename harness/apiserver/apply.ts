// Server-side apply: merges a manager's applied configuration into the live
// object, refusing (409) to take fields other managers own with a different
// value unless forced, and removing fields the manager applied before but no
// longer applies (when nobody else owns them).
import { ApiError } from './errors.ts';
import {
  decodePath,
  fieldSet,
  readManagers,
  rfc3339,
  writeManagers,
  type FieldScope,
  type ManagerEntry,
} from './managed-fields.ts';
import {
  clone,
  deepEqual,
  getPath,
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../src/kube/json-object.ts';

export interface ApplyOptions {
  manager: string;
  force: boolean;
  /** 'status' when applying to the status subresource. */
  subresource?: string;
  /** Whether status is a subresource of this resource (then main applies ignore status). */
  statusSubresource: boolean;
  apiVersion: string;
  now: Date;
}

function setPath(obj: JsonObject, path: string[], value: Json): void {
  let cur = obj;
  for (const seg of path.slice(0, -1)) {
    if (!isObject(cur[seg])) cur[seg] = {};
    cur = cur[seg] as JsonObject;
  }
  cur[path[path.length - 1] as string] = clone(value);
}

/** Deletes a leaf and then any parent maps it leaves empty. */
function deletePath(obj: JsonObject, path: string[]): void {
  const chain: JsonObject[] = [obj];
  for (const seg of path.slice(0, -1)) {
    const next = (chain[chain.length - 1] as JsonObject)[seg];
    if (!isObject(next)) return;
    chain.push(next);
  }
  delete (chain[chain.length - 1] as JsonObject)[path[path.length - 1] as string];
  for (let i = chain.length - 1; i > 0; i--) {
    if (Object.keys(chain[i] as JsonObject).length > 0) break;
    delete (chain[i - 1] as JsonObject)[path[i - 1] as string];
  }
}

const dotted = (p: string): string => '.' + decodePath(p).join('.');

/**
 * Returns the object after `manager` applies `applied` onto `current` (absent
 * for a create). Throws a 409 Conflict listing the contested fields.
 */
export function serverSideApply(
  current: KObject | undefined,
  applied: JsonObject,
  opts: ApplyOptions,
): KObject {
  const scope: FieldScope =
    opts.subresource === 'status' ? 'status' : opts.statusSubresource ? 'main' : 'all';
  const appliedSet = fieldSet(applied, scope);
  const entries: ManagerEntry[] = readManagers(current);
  const isMine = (e: ManagerEntry): boolean =>
    e.manager === opts.manager && e.operation === 'Apply' && e.subresource === opts.subresource;

  // Conflicts: another manager owns a field we set, and the values differ.
  const conflicts: { manager: string; apiVersion: string; path: string }[] = [];
  for (const e of entries) {
    if (e.manager === opts.manager) continue;
    for (const p of appliedSet) {
      if (!e.fields.has(p)) continue;
      const path = decodePath(p);
      if (!deepEqual(getPath(current, path), getPath(applied, path)))
        conflicts.push({ manager: e.manager, apiVersion: e.apiVersion, path: p });
    }
  }
  if (conflicts.length > 0 && !opts.force) {
    const lines = conflicts.map(
      (c) => `conflict with "${c.manager}" using ${c.apiVersion}: ${dotted(c.path)}`,
    );
    const message =
      conflicts.length === 1
        ? `Apply failed with 1 conflict: ${lines[0]}`
        : `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
    throw new ApiError(409, 'Conflict', message, {
      causes: conflicts.map((c, i) => ({
        reason: 'FieldManagerConflict',
        message: lines[i] as string,
        field: dotted(c.path),
      })),
    });
  }
  for (const c of conflicts) {
    for (const e of entries) if (e.manager === c.manager) e.fields.delete(c.path);
  }

  const next: KObject = current
    ? clone(current)
    : { metadata: clone(isObject(applied.metadata) ? applied.metadata : {}) };
  if (!current) {
    for (const k of ['apiVersion', 'kind'])
      if (applied[k] !== undefined) next[k] = clone(applied[k] as Json);
  }

  // Fields this manager applied last time but not now, that nobody else owns, go away.
  const mine = entries.find(isMine);
  if (mine) {
    for (const p of mine.fields) {
      if (appliedSet.has(p)) continue;
      if (entries.some((e) => e !== mine && e.fields.has(p))) continue;
      deletePath(next, decodePath(p));
    }
  }
  for (const p of appliedSet) {
    const path = decodePath(p);
    setPath(next, path, getPath(applied, path) as Json);
  }

  const entry: ManagerEntry = mine ?? {
    manager: opts.manager,
    operation: 'Apply',
    apiVersion: opts.apiVersion,
    time: '',
    fields: new Set(),
  };
  if (opts.subresource) entry.subresource = opts.subresource;
  entry.fields = appliedSet;
  entry.time = rfc3339(opts.now);
  entry.apiVersion = opts.apiVersion;
  writeManagers(next, mine ? entries : [...entries, entry]);
  return next;
}
