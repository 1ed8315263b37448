// The watch index narrows which watches an event visits; these tests pin that
// an event reaches exactly the watches it should (including one whose object
// leaves its scope), and, as a property, that watches followed through the
// index send exactly what watches subscribed to the whole store send.
import { expect } from 'chai';
import fc from 'fast-check';
import type { KObject } from '../../src/kube/json-object.ts';
import { BUILTIN_RESOURCES } from '../../harness/apiserver/resources.ts';
import { fieldSelector, labelSelector, bothSelectors } from '../../src/kube/selectors.ts';
import { ObjectStore, type StoreEvent } from '../../harness/apiserver/store.ts';
import { startWatch } from '../../harness/apiserver/watch.ts';
import { indexKeyOf, WatchIndex } from '../../harness/apiserver/watch-index.ts';

const pods = BUILTIN_RESOURCES.find((r) => r.plural === 'pods')!;

function pod(name: string, nodeName?: string, phase?: string): KObject {
  const o: KObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'ns' } };
  if (nodeName !== undefined) o.spec = { nodeName };
  if (phase !== undefined) o.status = { phase };
  return o;
}

describe('cluster: watch index', () => {
  it('indexKeyOf takes the first equality term and ignores inequalities', () => {
    expect(indexKeyOf('spec.nodeName=n1')).to.deep.equal({ path: 'spec.nodeName', value: 'n1' });
    expect(indexKeyOf('status.phase!=Running,metadata.name==a')).to.deep.equal({
      path: 'metadata.name',
      value: 'a',
    });
    expect(indexKeyOf('status.phase!=Running')).to.equal(undefined);
    expect(indexKeyOf('')).to.equal(undefined);
    expect(indexKeyOf(null)).to.equal(undefined);
    expect(() => indexKeyOf('???')).to.throw(/invalid selector/);
  });

  it('an event visits the unfiled watches and those filed under its values, now and before', () => {
    const store = new ObjectStore();
    const index = new WatchIndex(store);
    const seen: string[] = [];
    const add = (name: string, resource: string, sel?: string): (() => void) =>
      index.add(resource, indexKeyOf(sel), () => seen.push(name));
    add('all-pods', 'pods');
    add('n1', 'pods', 'spec.nodeName=n1');
    add('n2', 'pods', 'spec.nodeName=n2');
    add('n3', 'pods', 'spec.nodeName=n3');
    add('name-a', 'pods', 'metadata.name=a');
    add('unbound', 'pods', 'spec.nodeName=');
    const removeNodes = add('nodes-n1', 'nodes', 'metadata.name=n1');
    expect(index.size()).to.equal(7);

    const at = (type: StoreEvent['type'], obj: KObject, prev?: KObject): string[] => {
      seen.length = 0;
      store.commit(type, 'pods', obj, prev);
      return [...seen].sort();
    };
    expect(at('ADDED', pod('a'))).to.deep.equal(['all-pods', 'name-a', 'unbound']);
    expect(at('MODIFIED', pod('a', 'n1'), pod('a'))).to.deep.equal([
      'all-pods',
      'n1',
      'name-a',
      'unbound',
    ]);
    // Moving from n1 to n2: n1 must hear of it (the pod leaves its scope).
    expect(at('MODIFIED', pod('b', 'n2'), pod('b', 'n1'))).to.deep.equal(['all-pods', 'n1', 'n2']);
    expect(at('MODIFIED', pod('b', 'n2', 'Running'), pod('b', 'n2'))).to.deep.equal([
      'all-pods',
      'n2',
    ]);
    expect(at('DELETED', pod('b', 'n2'), pod('b', 'n2'))).to.deep.equal(['all-pods', 'n2']);
    seen.length = 0;
    store.commit('ADDED', 'nodes', { kind: 'Node', metadata: { name: 'n1' } });
    expect(seen).to.deep.equal(['nodes-n1']);

    removeNodes();
    removeNodes();
    expect(index.size()).to.equal(6);
    seen.length = 0;
    store.commit('MODIFIED', 'nodes', { kind: 'Node', metadata: { name: 'n1' } });
    expect(seen).to.deep.equal([]);
  });

  it('a removed watch is no longer visited and its empty bucket goes away', () => {
    const store = new ObjectStore();
    const index = new WatchIndex(store);
    const key = indexKeyOf('spec.nodeName=n1');
    const a = index.add('pods', key, () => undefined);
    const b = index.add('pods', key, () => undefined);
    const ev: StoreEvent = { type: 'ADDED', resource: 'pods', rv: 2, object: pod('x', 'n1') };
    expect(index.candidates(ev)).to.have.length(2);
    a();
    expect(index.candidates(ev)).to.have.length(1);
    b();
    expect(index.candidates(ev)).to.have.length(0);
    expect(index.size()).to.equal(0);
  });

  it('property: watches through the index send exactly what store-wide watches send', () => {
    const nodeArb = fc.constantFrom(undefined, 'n1', 'n2', 'n3', '');
    const phaseArb = fc.constantFrom(undefined, 'Pending', 'Running');
    const writeArb = fc.record({
      name: fc.constantFrom('a', 'b', 'c'),
      node: nodeArb,
      phase: phaseArb,
      del: fc.boolean(),
      label: fc.constantFrom(undefined, 'x', 'y'),
    });
    const selArb = fc.record({
      fields: fc.constantFrom(
        '',
        'spec.nodeName=n1',
        'spec.nodeName==n2',
        'spec.nodeName=',
        'spec.nodeName!=n1',
        'metadata.name=a',
        'status.phase=Running,spec.nodeName=n3',
        'spec.nodeName!=n2,status.phase=Pending',
      ),
      labels: fc.constantFrom('', 'app=x', 'app!=y'),
      namespace: fc.constantFrom(undefined, 'ns', 'other'),
    });
    fc.assert(
      fc.property(
        fc.array(selArb, { minLength: 1, maxLength: 6 }),
        fc.array(writeArb, { maxLength: 40 }),
        fc.integer({ min: 0, max: 40 }),
        (sels, writes, startAt) => {
          const store = new ObjectStore();
          const index = new WatchIndex(store);
          const plain: string[][] = sels.map(() => []);
          const indexed: string[][] = sels.map(() => []);
          const encode = (type: string, o: KObject): string =>
            `${type} ${String(o.metadata.name)}@${String(o.metadata.resourceVersion)}`;
          const open = (): void => {
            sels.forEach((s, i) => {
              const req = {
                resource: pods,
                ...(s.namespace ? { namespace: s.namespace } : {}),
                selector: bothSelectors(labelSelector(s.labels), fieldSelector(s.fields)),
                bookmarks: false,
                bookmarkIntervalMs: 1000,
                encode,
              };
              startWatch(store, req, { send: (l) => plain[i]!.push(l), end: () => {} }, () => {});
              const key = indexKeyOf(s.fields);
              startWatch(
                store,
                { ...req, index, ...(key ? { indexKey: key } : {}) },
                { send: (l) => indexed[i]!.push(l), end: () => {} },
                () => {},
              );
            });
          };
          const current = new Map<string, KObject>();
          writes.forEach((w, n) => {
            if (n === startAt) open();
            const prev = current.get(w.name);
            if (w.del) {
              if (!prev) return;
              current.delete(w.name);
              store.commit('DELETED', 'pods', { ...prev, metadata: { ...prev.metadata } }, prev);
              return;
            }
            const obj = pod(w.name, w.node, w.phase);
            if (w.label) obj.metadata.labels = { app: w.label };
            store.commit(prev ? 'MODIFIED' : 'ADDED', 'pods', obj, prev);
            current.set(w.name, obj);
          });
          if (startAt >= writes.length) open();
          expect(indexed).to.deep.equal(plain);
        },
      ),
      { numRuns: 300 },
    );
  });
});
