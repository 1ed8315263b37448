// Authentication and RBAC over real HTTP: every rule shape Kubernetes has
// (verbs, apiGroups, resources and subresources, "*/sub", resourceNames,
// nonResourceURLs, "*" wildcards), bindings to users, groups and service
// accounts, Role vs ClusterRole, RoleBinding vs ClusterRoleBinding; 401 and
// 403 bodies as kube-apiserver sends them.
import { expect } from 'chai';
import { parseTokenFile, TokenFileError } from '../../harness/apiserver/auth/token-file.ts';
import { NNC_PATH, nnc } from './helpers.ts';
import { RBAC, strictServer, type StrictServer } from './access-helpers.ts';

// Paths and rules as a client sends them and a manifest writes them (the wire
// format and RBAC documents), spelled out rather than built from src/nnc.
const NNC_NS = '/apis/acn.azure.com/v1alpha/namespaces/kube-system';
const MERGE = 'application/merge-patch+json';

interface Case {
  name: string;
  rules: object[];
  /** ClusterRole bound by a ClusterRoleBinding, ClusterRole by a RoleBinding, or Role. */
  binding: 'cluster' | 'clusterrole-in-ns' | 'role';
  subject: 'user' | 'group';
  method: string;
  path: string;
  body?: unknown;
  ct?: string;
  want: number;
}

const NODE_LIST = '/api/v1/nodes';
const status = (name: string) => ({ status: { assignedIPCount: 3 }, metadata: { name } });

// One line per rule shape.
// prettier-ignore
const CASES: Case[] = [
  { name: 'verb granted', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['get'] }], binding: 'role', subject: 'user', method: 'GET', path: `${NNC_PATH}/a`, want: 200 },
  { name: 'verb not granted', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['get'] }], binding: 'role', subject: 'user', method: 'GET', path: NNC_PATH, want: 403 },
  { name: 'verb *', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['*'] }], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a`, body: { spec: { requestedIPCount: 2 } }, ct: MERGE, want: 200 },
  { name: 'wrong apiGroup', rules: [{ apiGroups: [''], resources: ['nodenetworkconfigs'], verbs: ['get'] }], binding: 'role', subject: 'user', method: 'GET', path: `${NNC_PATH}/a`, want: 403 },
  { name: 'apiGroup *', rules: [{ apiGroups: ['*'], resources: ['nodenetworkconfigs'], verbs: ['get'] }], binding: 'role', subject: 'user', method: 'GET', path: `${NNC_PATH}/a`, want: 200 },
  { name: 'resource * covers subresources', rules: [{ apiGroups: ['acn.azure.com'], resources: ['*'], verbs: ['patch'] }], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a/status`, body: status('a'), ct: MERGE, want: 200 },
  { name: 'resource does not cover its status', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['patch'] }], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a/status`, body: status('a'), ct: MERGE, want: 403 },
  { name: 'resource/status granted', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs/status'], verbs: ['patch'] } ], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a/status`, body: status('a'), ct: MERGE, want: 200 },
  { name: 'resource/status does not cover the resource', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs/status'], verbs: ['patch'] } ], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a`, body: { spec: {} }, ct: MERGE, want: 403 },
  { name: '*/status', rules: [{ apiGroups: ['acn.azure.com'], resources: ['*/status'], verbs: ['patch'] }], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a/status`, body: status('a'), ct: MERGE, want: 200 },
  { name: 'resource/* is no wildcard in RBAC', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs/*'], verbs: ['patch'] } ], binding: 'role', subject: 'user', method: 'PATCH', path: `${NNC_PATH}/a/status`, body: status('a'), ct: MERGE, want: 403 },
  { name: 'resourceNames: the named object', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], resourceNames: ['a'], verbs: ['get'] } ], binding: 'role', subject: 'user', method: 'GET', path: `${NNC_PATH}/a`, want: 200 },
  { name: 'resourceNames: another object', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], resourceNames: ['a'], verbs: ['get'] } ], binding: 'role', subject: 'user', method: 'GET', path: `${NNC_PATH}/b`, want: 403 },
  { name: 'resourceNames: list is not a named request', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], resourceNames: ['a'], verbs: ['list'] } ], binding: 'role', subject: 'user', method: 'GET', path: NNC_PATH, want: 403 },
  { name: 'resourceNames: list by metadata.name is', rules: [{ apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], resourceNames: ['a'], verbs: ['list'] } ], binding: 'role', subject: 'user', method: 'GET', path: `${NNC_PATH}?fieldSelector=metadata.name%3Da`, want: 200 },
  { name: 'Role applies only in its namespace', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }], binding: 'role', subject: 'user', method: 'GET', path: '/api/v1/namespaces/default/pods', want: 403 },
  { name: 'ClusterRole by RoleBinding: in the namespace', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }], binding: 'clusterrole-in-ns', subject: 'user', method: 'GET', path: '/api/v1/namespaces/kube-system/pods', want: 200 },
  { name: 'ClusterRole by RoleBinding: not elsewhere', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }], binding: 'clusterrole-in-ns', subject: 'user', method: 'GET', path: '/api/v1/namespaces/default/pods', want: 403 },
  { name: 'ClusterRole by RoleBinding: not cluster-wide', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }], binding: 'clusterrole-in-ns', subject: 'user', method: 'GET', path: '/api/v1/pods', want: 403 },
  { name: 'ClusterRoleBinding: every namespace', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }], binding: 'cluster', subject: 'user', method: 'GET', path: '/api/v1/pods', want: 200 },
  { name: 'cluster-scoped resource', rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['list'] }], binding: 'cluster', subject: 'user', method: 'GET', path: NODE_LIST, want: 200 },
  { name: 'bound to a group', rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['list'] }], binding: 'cluster', subject: 'group', method: 'GET', path: NODE_LIST, want: 200 },
  { name: 'create of a namespaced object', rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }], binding: 'role', subject: 'user', method: 'POST', path: '/api/v1/namespaces/kube-system/events', body: { metadata: { generateName: 'e-' }, involvedObject: {} }, want: 201 },
  { name: 'update is not patch', rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }], binding: 'role', subject: 'user', method: 'PUT', path: '/api/v1/namespaces/kube-system/events/x', body: { metadata: { name: 'x' } }, want: 403 },
  { name: 'nonResourceURLs exact', rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }], binding: 'cluster', subject: 'user', method: 'GET', path: '/metrics', want: 200 },
  { name: 'nonResourceURLs prefix*', rules: [{ nonResourceURLs: ['/met*'], verbs: ['get'] }], binding: 'cluster', subject: 'user', method: 'GET', path: '/metrics', want: 200 },
  { name: 'nonResourceURLs not granted', rules: [{ nonResourceURLs: ['/healthz'], verbs: ['get'] }], binding: 'cluster', subject: 'user', method: 'GET', path: '/metrics', want: 403 },
  { name: 'nonResourceURLs need a ClusterRoleBinding', rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }], binding: 'clusterrole-in-ns', subject: 'user', method: 'GET', path: '/metrics', want: 403 },
];

describe('apiserver: authentication and RBAC over HTTP', function () {
  this.timeout(20_000);
  let s: StrictServer;
  const users: Record<string, string> = { alice: 'alice,u-alice,"dev,ops"', nobody: 'nobody,u-0' };
  CASES.forEach((_, i) => (users[`tok-${i}`] = `user-${i},uid-${i},"group-${i}"`));

  before(async () => {
    s = await strictServer(users);
    for (const n of ['a', 'b'])
      expect((await s.admin('POST', NNC_PATH, nnc(n))).status).to.equal(201);
    await s.admin('POST', '/api/v1/namespaces/kube-system/events', {
      metadata: { name: 'x' },
      involvedObject: {},
    });
  });
  after(() => s.close());

  CASES.forEach((c, i) => {
    it(`${c.name}: ${c.method} ${c.path.replace(/\?.*/, '')} → ${c.want}`, async () => {
      const ns = 'kube-system';
      const name = `case-${i}`;
      const cluster = c.binding !== 'role';
      const role = { metadata: { name, ...(cluster ? {} : { namespace: ns }) }, rules: c.rules };
      expect(
        (
          await s.admin(
            'POST',
            `${RBAC}${cluster ? '' : `/namespaces/${ns}`}/${cluster ? 'clusterroles' : 'roles'}`,
            role,
          )
        ).status,
      ).to.equal(201);
      const subject =
        c.subject === 'user'
          ? { kind: 'User', name: `user-${i}` }
          : { kind: 'Group', name: `group-${i}` };
      const binding = {
        metadata: { name, ...(c.binding === 'cluster' ? {} : { namespace: ns }) },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: cluster ? 'ClusterRole' : 'Role',
          name,
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', ...subject }],
      };
      const where =
        c.binding === 'cluster' ? '/clusterrolebindings' : `/namespaces/${ns}/rolebindings`;
      expect((await s.admin('POST', `${RBAC}${where}`, binding)).status).to.equal(201);
      const r = await s.as(`tok-${i}`, c.method, c.path, c.body, c.ct);
      expect(r.status, JSON.stringify(r.body)).to.equal(c.want);
      // Nobody else got it.
      expect((await s.as('nobody', c.method, c.path, c.body, c.ct)).status).to.equal(403);
    });
  });

  it('a service-account subject is the system:serviceaccount user of its token', async () => {
    await s.admin('POST', '/api/v1/namespaces/kube-system/serviceaccounts', {
      metadata: { name: 'reader' },
    });
    await s.admin('POST', `${RBAC}/namespaces/kube-system/roles`, {
      metadata: { name: 'nnc-reader' },
      rules: [
        { apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['get', 'list'] },
      ],
    });
    await s.admin('POST', `${RBAC}/namespaces/kube-system/rolebindings`, {
      metadata: { name: 'nnc-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'nnc-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader' }], // namespace defaults to the binding's
    });
    const tr = await s.admin(
      'POST',
      '/api/v1/namespaces/kube-system/serviceaccounts/reader/token',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {},
      },
    );
    expect(tr.status).to.equal(201);
    const token = tr.body.status.token as string;
    expect((await s.as(token, 'GET', NNC_PATH)).status).to.equal(200);
    const denied = await s.as(token, 'PATCH', `${NNC_PATH}/a/status`, status('a'), MERGE);
    expect(denied.status).to.equal(403);
    expect(denied.body).to.deep.equal({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'nodenetworkconfigs.acn.azure.com "a" is forbidden: User "system:serviceaccount:kube-system:reader" cannot patch resource "nodenetworkconfigs/status" in API group "acn.azure.com" in the namespace "kube-system"',
      reason: 'Forbidden',
      details: { name: 'a', group: 'acn.azure.com', kind: 'nodenetworkconfigs' },
      code: 403,
    });
    // The service account deleted: its tokens stop working.
    await s.admin('DELETE', '/api/v1/namespaces/kube-system/serviceaccounts/reader');
    expect((await s.as(token, 'GET', NNC_PATH)).status).to.equal(401);
  });

  it('a binding to a missing role says so in the 403', async () => {
    await s.admin('POST', `${RBAC}/clusterrolebindings`, {
      metadata: { name: 'dangling' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'no-such-role' },
      subjects: [{ kind: 'User', name: 'alice' }],
    });
    const r = await s.as('alice', 'GET', '/api/v1/nodes');
    expect(r.body.message).to.equal(
      'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found',
    );
  });

  it('401 for a bad token and, without --anonymous, for no token', async () => {
    for (const token of ['not-a-token', undefined, 'a.b.c']) {
      const r = await s.as(token, 'GET', '/api');
      expect(r.status).to.equal(401);
      expect(r.body).to.deep.equal({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      });
    }
  });

  it('discovery is open to every authenticated user, nothing else is', async () => {
    for (const path of [
      '/api',
      '/api/v1',
      '/apis',
      '/apis/acn.azure.com/v1alpha',
      '/openapi/v3',
      '/openapi/v2',
      '/version',
    ])
      expect((await s.as('nobody', 'GET', path)).status, path).to.equal(200);
    const r = await s.as('nobody', 'GET', `${NNC_NS}/clustersubnetstates`);
    expect(r.status).to.equal(403);
    const m = await s.as('nobody', 'GET', '/metrics');
    expect(m.body.message).to.equal('forbidden: User "nobody" cannot get path "/metrics"');
  });

  it('system:masters may do anything; whoami shows the user', async () => {
    const r = await s.admin('DELETE', `${NNC_PATH}/b`);
    expect(r.status).to.equal(200);
    const me = await s.as('alice', 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    });
    expect(me.body.status.userInfo).to.deep.equal({
      username: 'alice',
      uid: 'u-alice',
      groups: ['dev', 'ops', 'system:authenticated'],
    });
  });

  it('anonymous requests, when allowed, are system:anonymous: health and version only', async () => {
    const open = await strictServer({}, { anonymous: true });
    try {
      expect((await open.as(undefined, 'GET', '/healthz')).status).to.equal(200);
      expect((await open.as(undefined, 'GET', '/version')).status).to.equal(200);
      const r = await open.as(undefined, 'GET', '/api');
      expect(r.status).to.equal(403);
      expect(r.body.message).to.equal('forbidden: User "system:anonymous" cannot get path "/api"');
    } finally {
      await open.close();
    }
  });
});

describe('apiserver: static token file', () => {
  it('reads token,user,uid,"groups" rows', () => {
    const users = parseTokenFile('t1,alice,u1,"dev,ops"\n\n t2, bob,u2\nt3,"carol, c",u3,""\n');
    expect(users.get('t1')).to.deep.equal({
      username: 'alice',
      uid: 'u1',
      groups: ['dev', 'ops'],
      extra: {},
    });
    expect(users.get('t2')?.username).to.equal('bob'); // leading spaces trimmed, as Go's csv
    expect(users.get('t3')).to.deep.equal({
      username: 'carol, c',
      uid: 'u3',
      groups: [],
      extra: {},
    });
  });

  for (const [text, why] of [
    ['t1,alice', /at least 3 columns/],
    [',alice,u1', /empty token/],
    ['t1,alice,u1\nt1,bob,u2', /line 2: duplicate token/],
    ['t1,"alice,u1', /unterminated/],
  ] as const)
    it(`refuses ${JSON.stringify(text)}`, () => {
      expect(() => parseTokenFile(text)).to.throw(TokenFileError, why);
    });
});
