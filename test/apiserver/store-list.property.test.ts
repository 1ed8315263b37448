// A list whose field selector names one object (`metadata.name=X`) is a
// look-up of that object, not a scan (harness/apiserver/store.ts). These
// tests pin that the look-up lists exactly what the scan lists, for
// namespaced and cluster-scoped objects, with the other terms of the
// selector still applied, and which selectors carry a name term.
import { expect } from 'chai';
import fc from 'fast-check';
import type { KObject } from '../../src/kube/json-object.ts';
import { bothSelectors, fieldSelector, labelSelector } from '../../src/kube/selectors.ts';
import { ObjectStore } from '../../harness/apiserver/store.ts';
import { nameTermOf } from '../../harness/apiserver/watch-index.ts';

const names = (objs: KObject[]): string[] =>
  objs.map((o) => `${String(o.metadata.namespace ?? '')}/${String(o.metadata.name)}`);

describe('cluster: listing by name', () => {
  it('nameTermOf finds a metadata.name equality among the terms, and nothing else', () => {
    expect(nameTermOf('metadata.name=n1')).to.equal('n1');
    expect(nameTermOf('spec.nodeName=n2,metadata.name==a')).to.equal('a');
    expect(nameTermOf('metadata.name=')).to.equal('');
    expect(nameTermOf('metadata.name!=a')).to.equal(undefined);
    expect(nameTermOf('spec.nodeName=n1')).to.equal(undefined);
    expect(nameTermOf('')).to.equal(undefined);
    expect(nameTermOf(null)).to.equal(undefined);
    expect(() => nameTermOf('???')).to.throw(/invalid selector/);
  });

  it('property: a list by name lists exactly what the scan lists', () => {
    const objArb = fc.record({
      name: fc.constantFrom('a', 'b', 'c'),
      namespace: fc.constantFrom('ns', 'other'),
      node: fc.constantFrom('n1', 'n2'),
      label: fc.constantFrom(undefined, 'x', 'y'),
      del: fc.boolean(),
    });
    const listArb = fc.record({
      name: fc.constantFrom('a', 'b', 'c', 'd', ''),
      fields: fc.constantFrom('', 'spec.nodeName=n1', 'spec.nodeName!=n2'),
      labels: fc.constantFrom('', 'app=x', 'app!=y'),
      namespace: fc.constantFrom('ns', 'other'),
    });
    fc.assert(
      fc.property(fc.array(objArb, { maxLength: 30 }), listArb, (writes, l) => {
        const store = new ObjectStore();
        for (const w of writes) {
          const meta = { name: w.name, namespace: w.namespace };
          const labels = w.label ? { app: w.label } : undefined;
          for (const [resource, metadata] of [
            ['pods', meta],
            ['nodes', { name: w.name }],
          ] as const) {
            const obj: KObject = {
              metadata: { ...metadata, ...(labels ? { labels } : {}) },
              spec: { nodeName: w.node },
            };
            const exists = store.get(resource, metadata.namespace, w.name) !== undefined;
            if (w.del && exists) store.commit('DELETED', resource, obj);
            else if (!w.del) store.commit(exists ? 'MODIFIED' : 'ADDED', resource, obj);
          }
        }
        const fields = l.fields ? `${l.fields},metadata.name=${l.name}` : `metadata.name=${l.name}`;
        const selector = bothSelectors(labelSelector(l.labels), fieldSelector(fields));
        const name = nameTermOf(fields) as string;
        expect(name).to.equal(l.name);
        expect(names(store.list('pods', l.namespace, selector, name))).to.deep.equal(
          names(store.list('pods', l.namespace, selector)),
        );
        expect(names(store.list('nodes', undefined, selector, name))).to.deep.equal(
          names(store.list('nodes', undefined, selector)),
        );
      }),
      { numRuns: 300 },
    );
  });
});
