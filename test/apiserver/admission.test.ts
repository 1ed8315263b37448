// ValidatingAdmissionPolicies over real HTTP: the features of the documented
// subset, one policy each; and the shipped per-node isolation policy of
// manifests/ with real bound service-account tokens: the sidecar of node A
// may write its own NNC's spec, never node B's NNC, its status or metadata.
import { expect } from 'chai';
import { NNC_PATH, nnc } from './helpers.ts';
import { RBAC, strictServer, type StrictServer } from './access-helpers.ts';
import { applySidecarManifests, sidecarToken } from './manifest-helpers.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../../src/nnc/types.ts';

const ADM = '/apis/admissionregistration.k8s.io/v1';
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/default/leases';
const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';
const POLICY = 'pool-monitor-sidecar-own-nnc';

const specApply = (name: string, requested: number) =>
  JSON.stringify({
    apiVersion: `${GROUP}/${NNC_VERSION}`,
    kind: NNC_KIND,
    metadata: { name, namespace: 'kube-system' },
    spec: { requestedIPCount: requested, ipsNotInUse: [] },
  });
const SSA = '?fieldManager=azure-cns&force=true';

async function cluster(mode: 'RBAC' | 'AlwaysAllow'): Promise<{ s: StrictServer; a: string }> {
  const s = await strictServer({}, { authorizationMode: mode });
  await applySidecarManifests(s, [
    'serviceaccount.yaml',
    'rbac.yaml',
    'node-isolation-policy.yaml',
  ]);
  for (const n of ['node-a', 'node-b']) {
    expect((await s.admin('POST', '/api/v1/nodes', { metadata: { name: n } })).status).to.equal(
      201,
    );
    const pod = {
      metadata: { name: `sidecar-${n}` },
      spec: { serviceAccountName: 'pool-monitor', nodeName: n, containers: [] },
    };
    expect((await s.admin('POST', '/api/v1/namespaces/kube-system/pods', pod)).status).to.equal(
      201,
    );
    expect((await s.admin('POST', NNC_PATH, nnc(n))).status).to.equal(201);
  }
  const a = await sidecarToken(s, { kind: 'Pod', apiVersion: 'v1', name: 'sidecar-node-a' });
  return { s, a };
}

const denied = (node: string, why: string): string =>
  `nodenetworkconfigs.acn.azure.com "${node}" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: ${why}`;

describe('admission: per-node isolation policy (manifests/) over HTTP', function () {
  this.timeout(20_000);
  let s: StrictServer;
  let a: string;
  before(async () => ({ s, a } = await cluster('RBAC')));
  after(() => s.close());

  it('a pod-bound token carries the node and pod extras of Kubernetes >= 1.30', async () => {
    const me = await s.as(a, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    });
    const u = me.body.status.userInfo;
    const node = await s.admin('GET', '/api/v1/nodes/node-a');
    const pod = await s.admin('GET', '/api/v1/namespaces/kube-system/pods/sidecar-node-a');
    expect(u.username).to.equal('system:serviceaccount:kube-system:pool-monitor');
    expect(u.groups).to.deep.equal([
      'system:serviceaccounts',
      'system:serviceaccounts:kube-system',
      'system:authenticated',
    ]);
    expect(u.extra).to.deep.include({
      'authentication.kubernetes.io/node-name': ['node-a'],
      'authentication.kubernetes.io/node-uid': [node.body.metadata.uid],
      'authentication.kubernetes.io/pod-name': ['sidecar-node-a'],
      'authentication.kubernetes.io/pod-uid': [pod.body.metadata.uid],
    });
    expect(u.extra['authentication.kubernetes.io/credential-id'][0]).to.match(/^JTI=/);
  });

  it("node A's sidecar applies its own NNC's spec", async () => {
    const r = await s.as(a, 'PATCH', `${NNC_PATH}/node-a${SSA}`, specApply('node-a', 32), APPLY);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.spec.requestedIPCount).to.equal(32);
  });

  it("node A's sidecar may not write node B's NNC, even an unchanged one; B's stays as it was", async () => {
    for (const requested of [250, 16]) {
      const r = await s.as(
        a,
        'PATCH',
        `${NNC_PATH}/node-b${SSA}`,
        specApply('node-b', requested),
        APPLY,
      );
      expect(r.status).to.equal(403);
      expect(r.body.reason).to.equal('Forbidden');
      expect(r.body.message).to.equal(
        denied(
          'node-b',
          'the sidecar of node node-a may write only its own NodeNetworkConfig, not node-b',
        ),
      );
    }
    expect((await s.admin('GET', `${NNC_PATH}/node-b`)).body.spec.requestedIPCount).to.equal(16);
  });

  it("node A's sidecar may not write its NNC's status (RBAC refuses first)", async () => {
    const r = await s.as(
      a,
      'PATCH',
      `${NNC_PATH}/node-a/status`,
      { status: { assignedIPCount: 250 } },
      MERGE,
    );
    expect(r.status).to.equal(403);
    expect(r.body.message).to.contain(
      'cannot patch resource "nodenetworkconfigs/status" in API group "acn.azure.com"',
    );
  });

  it("node A's sidecar may not change its NNC's labels, nor delete it", async () => {
    const r = await s.as(
      a,
      'PATCH',
      `${NNC_PATH}/node-a`,
      { metadata: { labels: { x: 'y' } } },
      MERGE,
    );
    expect(r.status).to.equal(403);
    expect(r.body.message).to.equal(
      denied(
        'node-a',
        'the sidecar may write only the spec of its NodeNetworkConfig, not its labels, annotations, owner references or finalizers',
      ),
    );
    const g = await s.admin('POST', `${RBAC}/namespaces/kube-system/roles`, {
      metadata: { name: 'nnc-delete' },
      rules: [
        { apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['delete'] },
      ],
    });
    expect(g.status).to.equal(201);
    await s.admin('POST', `${RBAC}/namespaces/kube-system/rolebindings`, {
      metadata: { name: 'nnc-delete' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'nnc-delete' },
      subjects: [{ kind: 'ServiceAccount', name: 'pool-monitor', namespace: 'kube-system' }],
    });
    const d = await s.as(a, 'DELETE', `${NNC_PATH}/node-a`);
    expect(d.status).to.equal(403);
    expect(d.body.message).to.equal(
      denied('node-a', 'the sidecar may only update its NodeNetworkConfig, not DELETE'),
    );
  });

  it('a token that names no node may write no NNC; a node-bound token only its node', async () => {
    const unbound = await sidecarToken(s);
    const r = await s.as(
      unbound,
      'PATCH',
      `${NNC_PATH}/node-a${SSA}`,
      specApply('node-a', 16),
      APPLY,
    );
    expect(r.status).to.equal(403);
    expect(r.body.message).to.contain("the sidecar's token names no node");
    const b = await sidecarToken(s, { kind: 'Node', apiVersion: 'v1', name: 'node-b' });
    expect(
      (await s.as(b, 'PATCH', `${NNC_PATH}/node-b${SSA}`, specApply('node-b', 48), APPLY)).status,
    ).to.equal(200);
    expect(
      (await s.as(b, 'PATCH', `${NNC_PATH}/node-a${SSA}`, specApply('node-a', 48), APPLY)).status,
    ).to.equal(403);
  });

  it('other users are not matched: the admin writes any NNC', async () => {
    const r = await s.admin(
      'PATCH',
      `${NNC_PATH}/node-b`,
      { metadata: { labels: { x: 'y' } } },
      MERGE,
    );
    expect(r.status).to.equal(200);
  });

  it('a deleted bound pod invalidates its token', async () => {
    const t = await sidecarToken(s, { kind: 'Pod', apiVersion: 'v1', name: 'sidecar-node-b' });
    expect((await s.as(t, 'GET', NNC_PATH)).status).to.equal(200);
    await s.admin('DELETE', '/api/v1/namespaces/kube-system/pods/sidecar-node-b');
    expect((await s.as(t, 'GET', NNC_PATH)).status).to.equal(401);
  });
});

describe('admission: the isolation policy alone (AlwaysAllow)', function () {
  this.timeout(20_000);
  it("refuses the sidecar's status writes by itself", async () => {
    const { s, a } = await cluster('AlwaysAllow');
    try {
      const r = await s.as(
        a,
        'PATCH',
        `${NNC_PATH}/node-a/status`,
        { status: { assignedIPCount: 1 } },
        MERGE,
      );
      expect(r.status).to.equal(403);
      expect(r.body.message).to.equal(
        denied(
          'node-a',
          'the sidecar may write only the spec of its NodeNetworkConfig, not status',
        ),
      );
      const c = await s.as(a, 'POST', NNC_PATH, nnc('node-a-2'));
      expect(c.body.message).to.contain('may write only its own NodeNetworkConfig, not node-a-2');
    } finally {
      await s.close();
    }
  });
});

interface PolicyCase {
  name: string;
  spec: Record<string, unknown>;
  actions?: string[];
  labels?: Record<string, string>;
  want: number;
  message?: string;
  warning?: string;
}

const leaseRules = {
  resourceRules: [
    {
      apiGroups: ['coordination.k8s.io'],
      apiVersions: ['v1'],
      resources: ['leases'],
      operations: ['CREATE'],
    },
  ],
};

// prettier-ignore
const POLICY_CASES: PolicyCase[] = [
  { name: 'message', spec: { validations: [{ expression: "object.spec.holderIdentity != 'evil'", message: 'no evil holders' }] }, want: 422, message: 'no evil holders' },
  { name: 'no message: the expression', spec: { validations: [{ expression: "object.spec.holderIdentity != 'evil'" }] }, want: 422, message: "failed expression: object.spec.holderIdentity != 'evil'" },
  { name: 'messageExpression', spec: { validations: [{ expression: 'false', message: 'static', messageExpression: "'holder ' + object.spec.holderIdentity" }] }, want: 422, message: 'holder evil' },
  { name: 'reason', spec: { validations: [{ expression: 'false', message: 'm', reason: 'Forbidden' }] }, want: 403, message: 'm' },
  { name: 'variables', spec: { variables: [{ name: 'who', expression: 'object.spec.holderIdentity' }], validations: [{ expression: "variables.who == 'good'", messageExpression: "'not ' + variables.who" }] }, want: 422, message: 'not evil' },
  { name: 'passes', spec: { validations: [{ expression: "object.metadata.name.startsWith('lease-')" }] }, want: 201 },
  { name: 'error, failurePolicy Fail', spec: { failurePolicy: 'Fail', validations: [{ expression: 'object.spec.nope == 1' }] }, want: 422, message: "expression 'object.spec.nope == 1' resulted in error" },
  { name: 'error, failurePolicy Ignore', spec: { failurePolicy: 'Ignore', validations: [{ expression: 'object.spec.nope == 1' }] }, want: 201 },
  { name: 'matchConditions false: not applied', spec: { matchConditions: [{ name: 'admins', expression: "request.userInfo.username == 'someone-else'" }], validations: [{ expression: 'false' }] }, want: 201 },
  { name: 'matchConditions true: applied', spec: { matchConditions: [{ name: 'admins', expression: "request.userInfo.groups.exists(g, g == 'system:masters')" }], validations: [{ expression: 'false', message: 'masters too' }] }, want: 422, message: 'masters too' },
  { name: 'excludeResourceRules', spec: { matchConstraints: { ...leaseRules, excludeResourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], resources: ['leases'], operations: ['*'] }] }, validations: [{ expression: 'false' }] }, want: 201 },
  { name: 'Warn action', spec: { validations: [{ expression: 'false', message: 'just saying' }] }, actions: ['Warn'], want: 201, warning: "Validation failed for ValidatingAdmissionPolicy 'case-11' with binding 'case-11': just saying" },
  { name: 'operation not matched', spec: { matchConstraints: { resourceRules: [{ ...leaseRules.resourceRules[0], operations: ['DELETE'] }] }, validations: [{ expression: 'false' }] }, want: 201 },
];

describe('admission: ValidatingAdmissionPolicy features over HTTP', function () {
  this.timeout(20_000);
  let s: StrictServer;
  before(async () => (s = await strictServer({})));
  after(() => s.close());

  POLICY_CASES.forEach((c, i) => {
    it(`${c.name} → ${c.want}`, async () => {
      const name = `case-${i}`;
      const spec = { matchConstraints: leaseRules, ...c.spec };
      // Each case sees only leases labelled with its name.
      const matchConstraints = {
        ...(spec.matchConstraints as object),
        objectSelector: { matchLabels: { case: name } },
      };
      expect(
        (
          await s.admin('POST', `${ADM}/validatingadmissionpolicies`, {
            metadata: { name },
            spec: { ...spec, matchConstraints },
          })
        ).status,
      ).to.equal(201);
      const binding = {
        metadata: { name },
        spec: { policyName: name, validationActions: c.actions ?? ['Deny'] },
      };
      expect(
        (await s.admin('POST', `${ADM}/validatingadmissionpolicybindings`, binding)).status,
      ).to.equal(201);
      const lease = {
        metadata: { name: `lease-${i}`, labels: { case: name } },
        spec: { holderIdentity: 'evil' },
      };
      const r = await s.admin('POST', LEASES, lease);
      expect(r.status, JSON.stringify(r.body)).to.equal(c.want);
      if (c.message) {
        expect(r.body.message).to.contain(
          `leases.coordination.k8s.io "lease-${i}" is forbidden: ValidatingAdmissionPolicy '${name}' with binding '${name}' denied request: ${c.message}`,
        );
        expect((await s.admin('GET', `${LEASES}/lease-${i}`)).status).to.equal(404);
      }
      if (c.warning)
        expect(r.headers.get('warning')).to.equal(`299 - ${JSON.stringify(c.warning)}`);
    });
  });

  it('follows its policies and bindings as they change: a binding removed, then changed', async () => {
    const policy = {
      metadata: { name: 'changing' },
      spec: {
        matchConstraints: { ...leaseRules, objectSelector: { matchLabels: { case: 'changing' } } },
        validations: [{ expression: 'false', message: 'no leases' }],
      },
    };
    expect((await s.admin('POST', `${ADM}/validatingadmissionpolicies`, policy)).status).to.equal(
      201,
    );
    const lease = (n: number) => ({
      metadata: { name: `changing-${n}`, labels: { case: 'changing' } },
      spec: { holderIdentity: 'x' },
    });
    // A policy without a binding does nothing.
    expect((await s.admin('POST', LEASES, lease(1))).status).to.equal(201);
    const binding = (actions: string[]) => ({
      metadata: { name: 'changing' },
      spec: { policyName: 'changing', validationActions: actions },
    });
    const bindings = `${ADM}/validatingadmissionpolicybindings`;
    expect((await s.admin('POST', bindings, binding(['Deny']))).status).to.equal(201);
    expect((await s.admin('POST', LEASES, lease(2))).status).to.equal(422);
    expect((await s.admin('DELETE', `${bindings}/changing`)).status).to.equal(200);
    expect((await s.admin('POST', LEASES, lease(3))).status).to.equal(201);
    expect((await s.admin('POST', bindings, binding(['Warn']))).status).to.equal(201);
    const warned = await s.admin('POST', LEASES, lease(4));
    expect(warned.status).to.equal(201);
    expect(warned.headers.get('warning')).to.contain('no leases');
    expect(
      (await s.admin('DELETE', `${ADM}/validatingadmissionpolicies/changing`)).status,
    ).to.equal(200);
    expect((await s.admin('POST', LEASES, lease(5))).headers.get('warning')).to.equal(null);
  });

  it('a refused patch of the spec alone leaves the stored object as it was (managedFields, generation)', async () => {
    const rules = (group: string, resource: string) => ({
      apiGroups: [group],
      apiVersions: ['*'],
      resources: [resource],
      operations: ['UPDATE'],
    });
    const policy = {
      metadata: { name: 'frozen' },
      spec: {
        matchConstraints: {
          resourceRules: [
            rules('coordination.k8s.io', 'leases'),
            rules('acn.azure.com', 'nodenetworkconfigs'),
          ],
          objectSelector: { matchLabels: { case: 'frozen' } },
        },
        validations: [{ expression: 'false', message: 'frozen' }],
      },
    };
    const binding = {
      metadata: { name: 'frozen' },
      spec: { policyName: 'frozen', validationActions: ['Deny'] },
    };
    expect((await s.admin('POST', `${ADM}/validatingadmissionpolicies`, policy)).status).to.equal(
      201,
    );
    expect(
      (await s.admin('POST', `${ADM}/validatingadmissionpolicybindings`, binding)).status,
    ).to.equal(201);
    const lease = {
      metadata: { name: 'frozen', labels: { case: 'frozen' } },
      spec: { holderIdentity: 'x' },
    };
    expect((await s.admin('POST', LEASES, lease)).status).to.equal(201);
    expect(
      (await s.admin('POST', NNC_PATH, nnc('frozen', 16, { case: 'frozen' }))).status,
    ).to.equal(201);
    for (const [path, spec] of [
      [`${LEASES}/frozen`, { holderIdentity: 'y' }],
      [`${NNC_PATH}/frozen`, { requestedIPCount: 32 }],
    ] as const) {
      const before = (await s.admin('GET', path)).body;
      // Another manager: the write would have given it the field.
      const r = await s.admin('PATCH', `${path}?fieldManager=other`, { spec }, MERGE);
      expect(r.status, JSON.stringify(r.body)).to.equal(422);
      expect((await s.admin('GET', path)).body).to.deep.equal(before);
    }
  });
});
