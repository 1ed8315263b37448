// Pure parts of the API server: patches, selectors, store history, field
// ownership and server-side apply, routing, schema pruning.
import { expect } from 'chai';
import { serverSideApply } from '../../harness/apiserver/apply.ts';
import { ApiError } from '../../harness/apiserver/errors.ts';
import { fieldSet, fromFieldsV1, toFieldsV1 } from '../../harness/apiserver/managed-fields.ts';
import type { JsonObject, KObject } from '../../src/kube/json-object.ts';
import { jsonPatch, mergePatch, strategicMergePatch } from '../../harness/apiserver/patch.ts';
import { parseApiPath } from '../../harness/apiserver/router.ts';
import { validateCustomResource } from '../../harness/apiserver/schema.ts';
import { fieldSelector, labelSelector, SelectorError } from '../../src/kube/selectors.ts';
import { ObjectStore } from '../../harness/apiserver/store.ts';
import { jsonPathValues } from '../../harness/apiserver/table.ts';
import { GROUP, NNC_VERSION } from '../../src/nnc/types.ts';

const obj = (name: string, extra: JsonObject = {}): KObject => ({
  metadata: { name, namespace: 'ns' },
  ...extra,
});
const now = new Date('2025-01-01T00:00:00Z');

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('cluster: patches', () => {
  it('JSON merge patch sets, replaces lists and deletes with null', () => {
    expect(
      mergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { b: { c: null, e: 4 }, l: [3] }),
    ).to.deep.equal({
      a: 1,
      b: { d: 3, e: 4 },
      l: [3],
    });
  });

  it('JSON patch applies add/replace/remove/move/copy/test and rejects failures with 422', () => {
    const doc = { spec: { a: 1, l: ['x'] } };
    const out = jsonPatch(doc, [
      { op: 'add', path: '/spec/l/-', value: 'y' },
      { op: 'replace', path: '/spec/a', value: 2 },
      { op: 'copy', from: '/spec/a', path: '/spec/b' },
      { op: 'move', from: '/spec/b', path: '/spec/c' },
      { op: 'test', path: '/spec/c', value: 2 },
      { op: 'remove', path: '/spec/l/0' },
    ]);
    expect(out).to.deep.equal({ spec: { a: 2, c: 2, l: ['y'] } });
    expect(doc.spec.a).to.equal(1);
    expect(
      apiError(() => jsonPatch(doc, [{ op: 'test', path: '/spec/a', value: 9 }])).code,
    ).to.equal(422);
    expect(apiError(() => jsonPatch(doc, [{ op: 'remove', path: '/nope/x' }])).code).to.equal(422);
    expect(apiError(() => jsonPatch(doc, { op: 'add' })).code).to.equal(400);
    expect(apiError(() => jsonPatch(doc, [{ op: 'frob', path: '/a' }])).code).to.equal(400);
  });

  it('strategic merge patch merges containers and conditions by key and honours directives', () => {
    const pod = obj('p', {
      spec: {
        containers: [
          { name: 'a', image: 'a:1', env: [{ name: 'X', value: '1' }] },
          { name: 'b', image: 'b:1' },
        ],
        tolerations: [{ key: 't' }],
      },
      status: {
        conditions: [
          { type: 'Ready', status: 'False' },
          { type: 'Scheduled', status: 'True' },
        ],
      },
      metadata: { name: 'p', finalizers: ['f1'] },
    });
    const out = strategicMergePatch(pod, {
      $setElementOrder: 'ignored',
      metadata: { finalizers: ['f2'] },
      spec: {
        containers: [
          { name: 'a', image: 'a:2', env: [{ name: 'Y', value: '2' }] },
          { name: 'b', $patch: 'delete' },
          { name: 'c', image: 'c' },
        ],
        tolerations: [{ key: 'u' }],
      },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    }) as JsonObject;
    expect(out.spec).to.deep.equal({
      containers: [
        {
          name: 'a',
          image: 'a:2',
          env: [
            { name: 'X', value: '1' },
            { name: 'Y', value: '2' },
          ],
        },
        { name: 'c', image: 'c' },
      ],
      tolerations: [{ key: 'u' }],
    });
    expect(out.status).to.deep.equal({
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'Scheduled', status: 'True' },
      ],
    });
    expect((out.metadata as JsonObject).finalizers).to.deep.equal(['f1', 'f2']);
    const replaced = strategicMergePatch(pod, {
      spec: { $patch: 'replace', containers: [] },
    }) as JsonObject;
    expect(replaced.spec).to.deep.equal({ containers: [] });
    const del = strategicMergePatch(pod, {
      metadata: { '$deleteFromPrimitiveList/finalizers': ['f1'] },
    }) as JsonObject;
    expect((del.metadata as JsonObject).finalizers).to.deep.equal([]);
  });

  it("strategic merge patch merges a workload's pod template as a Pod, in $setElementOrder's order", () => {
    // What kubectl apply sends when an overlay adds env to a Deployment's container.
    const deploy: KObject = obj('d', {
      spec: {
        replicas: 2,
        template: {
          metadata: { labels: { app: 'x' } },
          spec: {
            containers: [
              { name: 'main', args: ['a'], env: [{ name: 'POD_NAME', value: 'p' }], image: 'i' },
            ],
          },
        },
      },
    });
    const out = strategicMergePatch(deploy, {
      spec: {
        template: {
          metadata: { labels: { extra: 'true' } },
          spec: {
            '$setElementOrder/containers': [{ name: 'main' }],
            containers: [
              {
                name: 'main',
                args: ['b', 'c'],
                '$setElementOrder/env': [{ name: 'AZURE' }, { name: 'POD_NAME' }],
                env: [{ name: 'AZURE', value: 'z' }],
              },
            ],
          },
        },
      },
    }) as JsonObject;
    expect(out.spec).to.deep.equal({
      replicas: 2,
      template: {
        metadata: { labels: { app: 'x', extra: 'true' } },
        spec: {
          containers: [
            {
              name: 'main',
              args: ['b', 'c'],
              env: [
                { name: 'AZURE', value: 'z' },
                { name: 'POD_NAME', value: 'p' },
              ],
              image: 'i',
            },
          ],
        },
      },
    });
  });
});

describe('cluster: selectors', () => {
  const pod = obj('p1', {
    metadata: { name: 'p1', namespace: 'ns', labels: { app: 'web', tier: 'fe' } },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running' },
  });
  it('label selectors: equality, inequality, sets, existence', () => {
    expect(labelSelector('app=web')(pod)).to.equal(true);
    expect(labelSelector('app==web,tier!=be')(pod)).to.equal(true);
    expect(labelSelector('app in (db, web),!missing')(pod)).to.equal(true);
    expect(labelSelector('app notin (web)')(pod)).to.equal(false);
    expect(labelSelector('tier')(pod)).to.equal(true);
    expect(labelSelector('app=db')(pod)).to.equal(false);
    expect(() => labelSelector('a b c')).to.throw(SelectorError, "found 'a b c'");
  });
  it('field selectors on name, namespace, node, hostNetwork and phase', () => {
    expect(fieldSelector('metadata.name=p1,metadata.namespace==ns')(pod)).to.equal(true);
    expect(
      fieldSelector('spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed')(pod),
    ).to.equal(true);
    expect(fieldSelector('spec.hostNetwork=false')(pod)).to.equal(true);
    expect(fieldSelector('spec.hostNetwork!=false')(pod)).to.equal(false);
    expect(fieldSelector('spec.nodeName=n2')(pod)).to.equal(false);
    expect(() => fieldSelector('nonsense')).to.throw(SelectorError, "can't understand 'nonsense'");
  });
});

describe('cluster: object store', () => {
  it('stamps a monotonic resourceVersion and replays history after a version', () => {
    const s = new ObjectStore(3, 0);
    s.commit('ADDED', 'pods', obj('a'));
    s.commit('ADDED', 'pods', obj('b'));
    expect(s.currentRv()).to.equal(2);
    expect(s.eventsAfter(0)?.map((e) => e.rv)).to.deep.equal([1, 2]);
    expect(s.eventsAfter(1)?.map((e) => e.rv)).to.deep.equal([2]);
    s.commit('ADDED', 'pods', obj('c'));
    s.commit('DELETED', 'pods', obj('a'));
    // The ring holds 3: the first event is gone, so version 0 is too old.
    expect(s.eventsAfter(0)).to.equal(undefined);
    expect(s.eventsAfter(1)?.map((e) => e.rv)).to.deep.equal([2, 3, 4]);
    expect(s.list('pods').map((o) => o.metadata.name)).to.deep.equal(['b', 'c']);
    s.compact();
    expect(s.eventsAfter(3)).to.equal(undefined);
    expect(s.eventsAfter(4)).to.deep.equal([]);
    expect(() => new ObjectStore(0)).to.throw(/historyLimit/);
  });

  it("replays one resource's history, and still says when the version is too old", () => {
    const s = new ObjectStore(4, 0);
    s.commit('ADDED', 'pods', obj('a'));
    s.commit('ADDED', 'nodes', obj('n'));
    s.commit('ADDED', 'pods', obj('b'));
    expect(s.eventsAfter(0, 'pods')?.map((e) => e.rv)).to.deep.equal([1, 3]);
    expect(s.eventsAfter(0, 'nodes')?.map((e) => e.rv)).to.deep.equal([2]);
    expect(s.eventsAfter(0, 'configmaps')).to.deep.equal([]);
    s.commit('ADDED', 'nodes', obj('m'));
    s.commit('ADDED', 'nodes', obj('o'));
    // Version 0 fell out of the history: too old whatever the resource.
    expect(s.eventsAfter(0, 'configmaps')).to.equal(undefined);
    expect(s.eventsAfter(1, 'pods')?.map((e) => e.rv)).to.deep.equal([3]);
  });
});

describe('cluster: server-side apply', () => {
  const base = {
    manager: 'azure-cns',
    force: false,
    statusSubresource: true,
    apiVersion: `${GROUP}/${NNC_VERSION}`,
    now,
  };
  it('records ownership, conflicts without force, takes over with force, drops unapplied fields', () => {
    const created = serverSideApply(
      undefined,
      { metadata: { name: 'n' }, spec: { requestedIPCount: 16, ipsNotInUse: ['a'] } },
      base,
    );
    expect(created.spec).to.deep.equal({ requestedIPCount: 16, ipsNotInUse: ['a'] });
    const mf = created.metadata.managedFields as JsonObject[];
    expect(mf).to.have.length(1);
    expect(mf[0]).to.include({ manager: 'azure-cns', operation: 'Apply' });
    expect(mf[0]?.fieldsV1).to.deep.equal({
      'f:spec': { 'f:ipsNotInUse': {}, 'f:requestedIPCount': {} },
    });
    // Another manager applying a different value conflicts.
    const err = apiError(() =>
      serverSideApply(
        created,
        { metadata: { name: 'n' }, spec: { requestedIPCount: 8 } },
        { ...base, manager: 'other' },
      ),
    );
    expect(err.code).to.equal(409);
    expect(err.message).to.match(/conflict with "azure-cns".*\.spec\.requestedIPCount/);
    // Same value: shared ownership, no conflict.
    const shared = serverSideApply(
      created,
      { metadata: { name: 'n' }, spec: { requestedIPCount: 16 } },
      { ...base, manager: 'other' },
    );
    expect(shared.metadata.managedFields as JsonObject[]).to.have.length(2);
    // Forced: the field moves to the new manager.
    const forced = serverSideApply(
      created,
      { metadata: { name: 'n' }, spec: { requestedIPCount: 8 } },
      { ...base, manager: 'other', force: true },
    );
    expect((forced.spec as JsonObject).requestedIPCount).to.equal(8);
    const cns = (forced.metadata.managedFields as JsonObject[]).find(
      (e) => e.manager === 'azure-cns',
    );
    expect(cns?.fieldsV1).to.deep.equal({ 'f:spec': { 'f:ipsNotInUse': {} } });
    // azure-cns stops applying ipsNotInUse: nobody else owns it, so it goes.
    const dropped = serverSideApply(
      forced,
      { metadata: { name: 'n' }, spec: { requestedIPCount: 8 } },
      { ...base, force: true },
    );
    expect(dropped.spec).to.deep.equal({ requestedIPCount: 8 });
  });
  it('ignores status on the main resource and everything but status on /status', () => {
    const cur: KObject = {
      metadata: { name: 'n' },
      spec: { requestedIPCount: 1 },
      status: { assignedIPCount: 1 },
    };
    const main = serverSideApply(
      cur,
      { metadata: { name: 'n' }, spec: { requestedIPCount: 2 }, status: { assignedIPCount: 9 } },
      base,
    );
    expect(main.status).to.deep.equal({ assignedIPCount: 1 });
    const st = serverSideApply(
      cur,
      { metadata: { name: 'n' }, spec: { requestedIPCount: 5 }, status: { assignedIPCount: 9 } },
      { ...base, manager: 'fulfiller', subresource: 'status' },
    );
    expect(st.spec).to.deep.equal({ requestedIPCount: 1 });
    expect(st.status).to.deep.equal({ assignedIPCount: 9 });
  });
  it('FieldsV1 round-trips', () => {
    const set = fieldSet(
      { metadata: { name: 'x', labels: { a: 'b' } }, spec: { x: 1, y: { z: [1] } } } as JsonObject,
      'all',
    );
    expect(fromFieldsV1(toFieldsV1(set))).to.deep.equal(set);
  });
});

describe('cluster: routing, schema, jsonpath', () => {
  const isNs = (_g: string, _v: string, p: string): boolean =>
    p === 'pods' || p === 'nodenetworkconfigs';
  it('parses API paths', () => {
    expect(parseApiPath('/api/v1/namespaces/default/pods/p/status', isNs)).to.deep.equal({
      kind: 'resource',
      group: '',
      version: 'v1',
      plural: 'pods',
      namespace: 'default',
      name: 'p',
      subresource: 'status',
      legacyWatch: false,
    });
    expect(parseApiPath('/api/v1/namespaces/default/status', isNs)).to.deep.include({
      plural: 'namespaces',
      name: 'default',
      subresource: 'status',
    });
    expect(
      parseApiPath('/apis/acn.azure.com/v1alpha/watch/nodenetworkconfigs', isNs),
    ).to.deep.include({ legacyWatch: true, plural: 'nodenetworkconfigs' });
    expect(parseApiPath('/apis/acn.azure.com', isNs)).to.deep.equal({
      kind: 'discovery-group',
      group: 'acn.azure.com',
    });
    expect(parseApiPath('/api/v1/a/b/c/d', isNs).kind).to.equal('other');
  });
  it('validates and prunes custom resources against their structural schema', () => {
    const schema = {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: { n: { type: 'integer' }, mode: { type: 'string', enum: ['a', 'b'] } },
        },
      },
    };
    const good: JsonObject = { spec: { n: 1, extra: true }, junk: 1 };
    expect(validateCustomResource(good, schema)).to.deep.equal([]);
    expect(good).to.deep.equal({ spec: { n: 1 } });
    const bad = validateCustomResource({ spec: { n: 'x', mode: 'c' } }, schema);
    expect(bad.map((c) => c.field)).to.deep.equal(['spec.n', 'spec.mode']);
  });
  it('evaluates printer-column JSONPath', () => {
    const node = {
      status: {
        conditions: [{ type: 'Ready', status: 'True' }],
        addresses: [{ address: '1' }, { address: '2' }],
      },
    };
    expect(jsonPathValues(node, '.status.conditions[?(@.type=="Ready")].status')).to.deep.equal([
      'True',
    ]);
    expect(jsonPathValues(node, '.status.addresses[*].address')).to.deep.equal(['1', '2']);
    expect(jsonPathValues(node, '.status.addresses[0].address')).to.deep.equal(['1']);
  });
});
