// The schedule signal's least privilege over HTTP, with the shipped RBAC
// and manifests/sidecar/node-taint-policy.yaml and real pod-bound tokens:
// the sidecar of node A may set and remove its own NoSchedule taint on its
// own Node, by the JSON patch the product sends; never on node B, never
// another taint, a NoExecute one, a label or unschedulable, never create
// or delete a Node.
import { expect } from 'chai';
import { strictServer, type StrictServer } from '../apiserver/access-helpers.ts';
import { applySidecarManifests, sidecarToken } from '../apiserver/manifest-helpers.ts';
import { TAINT_KEY, taintPatch, taintsWith } from '../../src/sidecar/schedule-signal.ts';

const JSON_PATCH = 'application/json-patch+json';
const MERGE = 'application/merge-patch+json';
const POLICY = 'pool-monitor-sidecar-own-node-taint';
const other = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };

describe('sidecar/schedule-signal: its Node, its taint only (RBAC + admission)', function () {
  this.timeout(20_000);
  let s: StrictServer;
  let a: string;
  before(async () => {
    s = await strictServer({}, { authorizationMode: 'RBAC' });
    await applySidecarManifests(s, ['serviceaccount.yaml', 'rbac.yaml', 'node-taint-policy.yaml']);
    for (const n of ['node-a', 'node-b']) {
      const node = { metadata: { name: n, labels: { zone: '1' } }, spec: { taints: [other] } };
      expect((await s.admin('POST', '/api/v1/nodes', node)).status).to.equal(201);
      const pod = {
        metadata: { name: `sidecar-${n}` },
        spec: { serviceAccountName: 'pool-monitor', nodeName: n, containers: [] },
      };
      expect((await s.admin('POST', '/api/v1/namespaces/kube-system/pods', pod)).status).to.equal(
        201,
      );
    }
    a = await sidecarToken(s, { kind: 'Pod', apiVersion: 'v1', name: 'sidecar-node-a' });
  });
  after(() => s.close());

  const nodeOf = async (n: string) => (await s.admin('GET', `/api/v1/nodes/${n}`)).body;
  const denied = (r: { status: number; body: { message?: string } }, why: RegExp) => {
    expect(r.status, JSON.stringify(r.body)).to.equal(403);
    expect(r.body.message).to.contain(`ValidatingAdmissionPolicy '${POLICY}'`);
    expect(r.body.message).to.match(why);
  };

  it("sets and removes its own taint on its own Node with the product's patch, other taints kept", async () => {
    const read = await s.as(a, 'GET', '/api/v1/nodes/node-a');
    expect(read.status).to.equal(200);
    const set = await s.as(
      a,
      'PATCH',
      '/api/v1/nodes/node-a',
      taintPatch(read.body, taintsWith(read.body.spec.taints, 'subnet-exhausted')),
      JSON_PATCH,
    );
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect((await nodeOf('node-a')).spec.taints).to.deep.equal([
      other,
      { key: TAINT_KEY, value: 'subnet-exhausted', effect: 'NoSchedule' },
    ]);
    // A patch made from a stale read fails its test: nothing clobbered.
    const stale = await s.as(
      a,
      'PATCH',
      '/api/v1/nodes/node-a',
      taintPatch(read.body, taintsWith(read.body.spec.taints, 'max-ip-count')),
      JSON_PATCH,
    );
    expect(stale.status).to.equal(422);
    const cleared = await s.as(
      a,
      'PATCH',
      '/api/v1/nodes/node-a',
      taintPatch(set.body, taintsWith(set.body.spec.taints, undefined)),
      JSON_PATCH,
    );
    expect(cleared.status, JSON.stringify(cleared.body)).to.equal(200);
    expect((await nodeOf('node-a')).spec.taints).to.deep.equal([other]);
  });

  it("may not taint node B, even with its own key; B's Node stays as it was", async () => {
    const b = await nodeOf('node-b');
    const r = await s.as(
      a,
      'PATCH',
      '/api/v1/nodes/node-b',
      taintPatch(b, taintsWith(b.spec.taints, 'not-ready')),
      JSON_PATCH,
    );
    denied(r, /the sidecar of node node-a may write only its own Node, not node-b/);
    expect((await nodeOf('node-b')).spec.taints).to.deep.equal([other]);
  });

  it('may not remove, add or change another taint, nor make its own NoExecute or twofold', async () => {
    const patch = (taints: unknown[]) => [{ op: 'replace', path: '/spec/taints', value: taints }];
    const ours = { key: TAINT_KEY, value: 'not-ready', effect: 'NoSchedule' };
    for (const taints of [
      [],
      [other, { key: 'x', effect: 'NoSchedule' }],
      [{ ...other, effect: 'NoExecute' }],
    ])
      denied(
        await s.as(a, 'PATCH', '/api/v1/nodes/node-a', patch(taints), JSON_PATCH),
        /no other taint of its Node/,
      );
    for (const taints of [
      [other, { ...ours, effect: 'NoExecute' }],
      [other, ours, { ...ours, value: 'max-ip-count' }],
    ])
      denied(
        await s.as(a, 'PATCH', '/api/v1/nodes/node-a', patch(taints), JSON_PATCH),
        /must be one NoSchedule taint/,
      );
  });

  it('may not change labels or unschedulable, nor create or delete a Node', async () => {
    denied(
      await s.as(
        a,
        'PATCH',
        '/api/v1/nodes/node-a',
        { metadata: { labels: { zone: '2' } } },
        MERGE,
      ),
      /not its labels/,
    );
    denied(
      await s.as(a, 'PATCH', '/api/v1/nodes/node-a', { spec: { unschedulable: true } }, MERGE),
      /unschedulable, podCIDR/,
    );
    // RBAC grants neither.
    expect((await s.as(a, 'DELETE', '/api/v1/nodes/node-a')).status).to.equal(403);
    expect(
      (await s.as(a, 'POST', '/api/v1/nodes', { metadata: { name: 'node-a' } })).status,
    ).to.equal(403);
    expect((await nodeOf('node-a')).metadata.labels).to.deep.equal({ zone: '1' });
  });
});
