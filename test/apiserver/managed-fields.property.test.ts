// Property: the managed fields the server records for a write are those of
// the plain definition below - every leaf a write changed or added goes to
// its manager, a leaf that disappeared to nobody - over histories of writes
// by several managers, to the main object and to status. The server's own
// version walks each object once and re-encodes only the entries it changes
// (managed-fields.ts); this checks it against the definition, entry by entry.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  decodePath,
  encodePath,
  fromFieldsV1,
  recordUpdate,
  rfc3339,
  toFieldsV1,
  type FieldScope,
  type FieldSet,
  type ManagerEntry,
} from '../../harness/apiserver/managed-fields.ts';
import {
  clone,
  deepEqual,
  getPath,
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../src/kube/json-object.ts';

/** The definition: leaf paths by a recursive walk over path arrays. */
function definedFieldSet(obj: JsonObject, scope: FieldScope): FieldSet {
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

/** FieldsV1 to paths and back, by definition: a walk, and a sorted build. */
function definedFromFieldsV1(v: unknown): FieldSet {
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

function definedToFieldsV1(set: FieldSet): JsonObject {
  const root: JsonObject = {};
  for (const enc of [...set].sort()) {
    let cur = root;
    for (const seg of decodePath(enc)) {
      const k = `f:${seg}`;
      if (!isObject(cur[k])) cur[k] = {};
      cur = cur[k] as JsonObject;
    }
  }
  return root;
}

function readManagers(obj: KObject | undefined): ManagerEntry[] {
  const mf = obj?.metadata.managedFields;
  if (!Array.isArray(mf)) return [];
  return mf.filter(isObject).map((e) => {
    const entry: ManagerEntry = {
      manager: String(e.manager),
      operation: e.operation === 'Apply' ? 'Apply' : 'Update',
      apiVersion: String(e.apiVersion),
      time: String(e.time),
      fields: definedFromFieldsV1(e.fieldsV1),
    };
    if (typeof e.subresource === 'string' && e.subresource) entry.subresource = e.subresource;
    return entry;
  });
}

function writeManagers(obj: KObject, entries: ManagerEntry[]): void {
  const kept = entries.filter((e) => e.fields.size > 0);
  if (kept.length === 0) {
    delete obj.metadata.managedFields;
    return;
  }
  obj.metadata.managedFields = kept.map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    time: e.time,
    fieldsType: 'FieldsV1',
    fieldsV1: definedToFieldsV1(e.fields),
    ...(e.subresource ? { subresource: e.subresource } : {}),
  }));
}

/** The definition of recording a non-apply write, on the definition's field sets. */
function definedRecordUpdate(
  prev: KObject | undefined,
  next: KObject,
  manager: string,
  subresource: string | undefined,
  now: Date,
): void {
  const entries = readManagers(prev);
  const scope: FieldScope = subresource === 'status' ? 'status' : 'all';
  const nextSet = definedFieldSet(next, scope);
  const prevSet = prev ? definedFieldSet(prev, scope) : new Set<string>();
  const changed = [...nextSet].filter(
    (p) =>
      !prevSet.has(p) || !deepEqual(getPath(prev, decodePath(p)), getPath(next, decodePath(p))),
  );
  const removed = [...prevSet].filter((p) => !nextSet.has(p));
  if (changed.length === 0 && removed.length === 0 && prev) {
    writeManagers(next, entries);
    return;
  }
  for (const e of entries) for (const p of [...changed, ...removed]) e.fields.delete(p);
  let mine = entries.find(
    (e) => e.manager === manager && e.operation === 'Update' && e.subresource === subresource,
  );
  if (!mine) {
    mine = { manager, operation: 'Update', apiVersion: 'v1', time: '', fields: new Set() };
    if (subresource) mine.subresource = subresource;
    entries.push(mine);
  }
  mine.time = rfc3339(now);
  for (const p of changed) mine.fields.add(p);
  writeManagers(next, entries);
}

const key = fc.constantFrom('a', 'b', 'c', 'd.e', 'f:g');
const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.integer({ min: 0, max: 3 }),
  fc.constantFrom('x', 'y', true, null),
  fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 2 }),
  fc.constant({}),
);
const tree: fc.Arbitrary<Json> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.dictionary(key, tie('node'), { maxKeys: 3 }),
  ),
})).node as fc.Arbitrary<Json>;
const labels = fc.option(fc.dictionary(key, fc.constantFrom('1', '2'), { maxKeys: 3 }), {
  nil: undefined,
});

interface Write {
  manager: string;
  status: boolean;
  labels: JsonObject | undefined;
  spec: Json;
  statusValue: Json;
}
const write: fc.Arbitrary<Write> = fc.record({
  manager: fc.constantFrom('kubelet', 'azure-cns', 'kubectl'),
  status: fc.boolean(),
  labels,
  spec: tree,
  statusValue: tree,
});

/** The object a write leaves: its part (main or status) from the write, the rest as it was. */
function written(prev: KObject | undefined, w: Write, withManaged: boolean): KObject {
  const base: KObject = prev
    ? clone(prev)
    : { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } };
  if (!withManaged) delete base.metadata.managedFields;
  if (w.status) base.status = clone(w.statusValue);
  else {
    base.spec = clone(w.spec);
    if (w.labels === undefined) delete base.metadata.labels;
    else base.metadata.labels = clone(w.labels);
  }
  return base;
}

describe('apiserver: managed fields against their definition', () => {
  it('every history of writes records the same entries, field for field', () => {
    fc.assert(
      fc.property(fc.array(write, { minLength: 1, maxLength: 12 }), (writes) => {
        let mine: KObject | undefined;
        let defined: KObject | undefined;
        writes.forEach((w, i) => {
          const now = new Date(Date.UTC(2026, 0, 1, 0, 0, i));
          const sub = mine && w.status ? 'status' : undefined;
          const a = written(mine, w, true);
          const b = written(defined, w, true);
          recordUpdate(mine, a, w.manager, 'v1', sub, now);
          definedRecordUpdate(defined, b, w.manager, sub, now);
          expect(JSON.parse(JSON.stringify(a.metadata.managedFields ?? null))).to.deep.equal(
            JSON.parse(JSON.stringify(b.metadata.managedFields ?? null)),
          );
          mine = a;
          defined = b;
        });
      }),
      { numRuns: 400 },
    );
  });

  it('an entry written again unchanged keeps its FieldsV1; a changed one gets a new one', () => {
    const pod: KObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', labels: { app: 'x' } },
      spec: { nodeName: 'n' },
    };
    recordUpdate(undefined, pod, 'workload', 'v1', undefined, new Date(0));
    const running: KObject = { ...clone(pod), status: { phase: 'Running', podIP: '10.0.0.4' } };
    recordUpdate(pod, running, 'kubelet', 'v1', 'status', new Date(1000));
    const [created, status] = running.metadata.managedFields as JsonObject[];
    expect((pod.metadata.managedFields as JsonObject[])[0]!.fieldsV1).to.equal(created!.fieldsV1);
    expect(status!.fieldsV1).to.deep.equal({ 'f:status': { 'f:phase': {}, 'f:podIP': {} } });
    // Read back as the paths it was built from.
    expect([...fromFieldsV1(status!.fieldsV1)].sort()).to.deep.equal([
      encodePath(['status', 'phase']),
      encodePath(['status', 'podIP']),
    ]);
    // A FieldsV1 built elsewhere (a client's) is walked: the same paths.
    const foreign = JSON.parse(JSON.stringify(status!.fieldsV1)) as JsonObject;
    expect(fromFieldsV1(foreign)).to.deep.equal(fromFieldsV1(status!.fieldsV1));
    expect(toFieldsV1(fromFieldsV1(foreign))).to.deep.equal(foreign);
  });

  it('writes times as RFC 3339 to the second, whatever order they come in', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4_102_444_800_000 }), { maxLength: 30 }),
        fc.array(fc.integer({ min: -2_500, max: 2_500 }), { maxLength: 30 }),
        (starts, steps) => {
          // Jumps anywhere, and steps around one second (the cached one).
          const times = [...starts, ...steps.map((d) => (starts[0] ?? 0) + d)].filter(
            (t) => t >= 0,
          );
          for (const t of times)
            expect(rfc3339(new Date(t))).to.equal(new Date(t).toISOString().slice(0, 19) + 'Z');
        },
      ),
    );
  });
});
