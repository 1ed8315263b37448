// The fulfiller's Node writes over HTTP, with the shipped RBAC and
// manifests/fulfiller/node-restore-policy.yaml and a TokenRequest token of
// its service account: its own setNodeRestore (kube-api.ts) sets, changes
// and clears the restore annotation with the addresses finalizer, other
// annotations and finalizers kept; any other change to a Node is refused
// by the policy, and create, delete and status writes by RBAC, and by the
// policy too when RBAC grants them.
import { expect } from 'chai';
import { KubeConfig } from '@kubernetes/client-node';
import { kubeconfigYaml } from '../../harness/apiserver/kubeconfig.ts';
import { RBAC, strictServer, type StrictServer } from '../apiserver/access-helpers.ts';
import { applyManifests, serviceAccountToken } from '../apiserver/manifest-helpers.ts';
import { kubeNncLifecycleApi } from '../../src/fulfiller/kube-api.ts';
import type { NodeObject } from '../../src/fulfiller/nodes.ts';
import { ADDRESSES_FINALIZER } from '../../src/fulfiller/quarantine.ts';
import { RESTORE_ANNOTATION, type NetworkContainer } from '../../src/nnc/types.ts';
import type { NncLifecycleApi } from '../../src/fulfiller/ports.ts';

const MERGE = 'application/merge-patch+json';
const POLICY = 'pool-monitor-fulfiller-node-restore';
const ACCOUNT = 'pool-monitor-fulfiller';
const FIRST = 'example.com/first';
const LAST = 'example.com/last';
const NOTE = { 'example.com/note': 'kept' };
const other = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };
const nc = (id: string, ip: string): NetworkContainer => ({
  id,
  primaryIP: ip,
  subnetAddressSpace: '10.244.0.0/16',
  ipAssignments: [{ name: `${id}-0`, ip }],
});

describe('fulfiller/node-restore: its Node writes are the restore annotation and finalizer only', function () {
  this.timeout(20_000);
  let s: StrictServer;
  let token: string;
  let api: NncLifecycleApi;
  before(async () => {
    s = await strictServer({}, { authorizationMode: 'RBAC' });
    await applyManifests(s, 'fulfiller', [
      'serviceaccount.yaml',
      'rbac.yaml',
      'node-restore-policy.yaml',
    ]);
    for (const [name, finalizers] of [
      ['node-a', [FIRST, LAST]],
      // Ours between two others: the fulfiller's patch puts it last.
      ['node-b', [FIRST, ADDRESSES_FINALIZER, LAST]],
    ] as const) {
      const node = {
        metadata: {
          name,
          labels: { zone: '1' },
          annotations: {
            ...NOTE,
            ...(name === 'node-b'
              ? { [RESTORE_ANNOTATION]: JSON.stringify([nc('b', '10.244.2.9')]) }
              : {}),
          },
          finalizers,
        },
        spec: { taints: [other], podCIDR: '10.244.1.0/24', providerID: `test:///${name}` },
      };
      expect((await s.admin('POST', '/api/v1/nodes', node)).status).to.equal(201);
    }
    token = await serviceAccountToken(s, ACCOUNT);
    const kc = new KubeConfig();
    kc.loadFromString(
      kubeconfigYaml(s.server.url, { token, ...(s.server.caPem ? { caPem: s.server.caPem } : {}) }),
    );
    api = kubeNncLifecycleApi(kc, 'kube-system');
  });
  after(() => s.close());

  const nodeOf = async (n: string) =>
    (await s.admin('GET', `/api/v1/nodes/${n}`)).body as NodeObject & {
      metadata: { resourceVersion: string };
      spec: unknown;
    };
  const denied = (r: { status: number; body: { message?: string } }, why: RegExp) => {
    expect(r.status, JSON.stringify(r.body)).to.equal(403);
    expect(r.body.message).to.contain(`ValidatingAdmissionPolicy '${POLICY}'`);
    expect(r.body.message).to.match(why);
  };
  const rbacDenied = (r: { status: number; body: { message?: string } }) => {
    expect(r.status, JSON.stringify(r.body)).to.equal(403);
    expect(r.body.message).to.contain(`User "system:serviceaccount:kube-system:${ACCOUNT}" cannot`);
  };

  it("sets, changes and clears them with the fulfiller's own patch, all else kept", async () => {
    const before = await nodeOf('node-a');
    const set = await api.setNodeRestore(before, [nc('a', '10.244.1.5')]);
    expect(set.metadata?.finalizers).to.deep.equal([FIRST, LAST, ADDRESSES_FINALIZER]);
    expect(set.metadata?.annotations).to.deep.equal({
      ...NOTE,
      [RESTORE_ANNOTATION]: JSON.stringify([nc('a', '10.244.1.5')]),
    });
    const more = [nc('a', '10.244.1.5'), nc('c', '10.244.1.6')];
    const changed = await api.setNodeRestore(set, more);
    expect(changed.metadata?.annotations?.[RESTORE_ANNOTATION]).to.equal(JSON.stringify(more));
    const cleared = await api.setNodeRestore(changed, undefined);
    const after = await nodeOf('node-a');
    expect(cleared.metadata?.resourceVersion).to.equal(after.metadata.resourceVersion);
    expect(after.metadata.finalizers).to.deep.equal([FIRST, LAST]);
    expect(after.metadata.annotations).to.deep.equal(NOTE);
    expect(after.metadata.labels).to.deep.equal({ zone: '1' });
    expect(after.spec).to.deep.equal(before.spec);
  });

  it('moves its finalizer last among the others, and clears it from there', async () => {
    const set = await api.setNodeRestore(await nodeOf('node-b'), [nc('b', '10.244.2.9')]);
    expect(set.metadata?.finalizers).to.deep.equal([FIRST, LAST, ADDRESSES_FINALIZER]);
    await api.setNodeRestore(set, undefined);
    const after = await nodeOf('node-b');
    expect(after.metadata.finalizers).to.deep.equal([FIRST, LAST]);
    expect(after.metadata.annotations).to.deep.equal(NOTE);
  });

  it('refuses any other change of a Node, which stays as it was', async () => {
    const restore = { [RESTORE_ANNOTATION]: '[]' };
    const ours = [FIRST, LAST, ADDRESSES_FINALIZER];
    const cases: [string, object, RegExp][] = [
      ['a label', { metadata: { labels: { zone: '2' } } }, /not its labels or owner references/],
      [
        'an owner reference',
        {
          metadata: {
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-b', uid: 'x' }],
          },
        },
        /not its labels or owner references/,
      ],
      [
        'a taint',
        { spec: { taints: [other, { key: 'x', effect: 'NoSchedule' }] } },
        /not its spec/,
      ],
      ['no taint', { spec: { taints: null } }, /not its spec/],
      ['spec.unschedulable', { spec: { unschedulable: true } }, /not its spec/],
      ['spec.providerID', { spec: { providerID: 'test:///other' } }, /not its spec/],
      [
        'another annotation',
        { metadata: { annotations: { 'example.com/note': 'y' } } },
        /no other annotation/,
      ],
      [
        'another annotation removed',
        { metadata: { annotations: { 'example.com/note': null } } },
        /no other annotation/,
      ],
      [
        'another annotation beside its own',
        { metadata: { annotations: { ...restore, 'example.com/new': '1' }, finalizers: ours } },
        /no other annotation/,
      ],
      [
        'another finalizer removed',
        { metadata: { finalizers: [FIRST] } },
        /every other finalizer stays/,
      ],
      [
        'another finalizer beside its own',
        { metadata: { annotations: restore, finalizers: [...ours, 'example.com/new'] } },
        /every other finalizer stays/,
      ],
      ['the finalizers reordered', { metadata: { finalizers: [LAST, FIRST] } }, /in its order/],
      [
        'its finalizer twice',
        { metadata: { annotations: restore, finalizers: [...ours, ADDRESSES_FINALIZER] } },
        /\(once\)/,
      ],
      ['its finalizer alone', { metadata: { finalizers: ours } }, /set and removed together/],
      ['its annotation alone', { metadata: { annotations: restore } }, /set and removed together/],
    ];
    const before = await nodeOf('node-a');
    for (const [what, patch, why] of cases) {
      const r = await s.as(token, 'PATCH', '/api/v1/nodes/node-a', patch, MERGE);
      expect(r.status, what).to.equal(403);
      denied(r, why);
    }
    expect(await nodeOf('node-a')).to.deep.equal(before);
  });

  it('create, delete and status writes: RBAC refuses them; granted, the policy still does', async () => {
    const status = { status: { conditions: [{ type: 'Ready', status: 'False' }] } };
    const create = () => s.as(token, 'POST', '/api/v1/nodes', { metadata: { name: 'node-x' } });
    const remove = () => s.as(token, 'DELETE', '/api/v1/nodes/node-a');
    const writeStatus = () => s.as(token, 'PATCH', '/api/v1/nodes/node-a/status', status, MERGE);
    for (const r of [await create(), await remove(), await writeStatus()]) rbacDenied(r);

    // As if someone granted the fulfiller more: the policy is the last word.
    const role = {
      metadata: { name: 'too-wide' },
      rules: [
        { apiGroups: [''], resources: ['nodes'], verbs: ['create', 'delete', 'update'] },
        { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch', 'update'] },
      ],
    };
    const binding = {
      metadata: { name: 'too-wide' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'too-wide' },
      subjects: [{ kind: 'ServiceAccount', name: ACCOUNT, namespace: 'kube-system' }],
    };
    expect((await s.admin('POST', `${RBAC}/clusterroles`, role)).status).to.equal(201);
    expect((await s.admin('POST', `${RBAC}/clusterrolebindings`, binding)).status).to.equal(201);
    const before = await nodeOf('node-a');
    denied(await create(), /may only update a Node .*, not CREATE/);
    denied(await remove(), /may only update a Node .*, not DELETE/);
    denied(await writeStatus(), /not its status/);
    // A whole-object update (PUT) is held to the same rules as a patch.
    const put = { ...before, metadata: { ...before.metadata, labels: { zone: '2' } } };
    denied(await s.as(token, 'PUT', '/api/v1/nodes/node-a', put), /not its labels/);
    expect(await nodeOf('node-a')).to.deep.equal(before);
    expect((await s.admin('GET', '/api/v1/nodes/node-x')).status).to.equal(404);
  });
});
