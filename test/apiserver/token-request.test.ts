// TokenRequest and bound service-account tokens side by side with
// kube-apiserver 1.30–1.33, over real HTTP. Each case names the rule of
// pkg/registry/core/serviceaccount/storage/token.go (minting) or
// pkg/serviceaccount/claims.go (validating on every request) it follows.
import { expect } from 'chai';
import { ServiceAccountTokens } from '../../harness/apiserver/auth/service-account-tokens.ts';
import { parseFeatureGates } from '../../harness/apiserver/auth/feature-gates.ts';
import { strictServer, type StrictServer } from './access-helpers.ts';

const NS = '/api/v1/namespaces/kube-system';
const WHOAMI = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const REVIEW = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };

const tokenFor = (s: StrictServer, sa: string, ref?: object) =>
  s.admin('POST', `${NS}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: ref ? { boundObjectRef: ref } : {},
  });

async function created(s: StrictServer, path: string, body: object): Promise<string> {
  const r = await s.admin('POST', path, body);
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return r.body.metadata.uid as string;
}

const pod = (name: string, sa: string | undefined, node: string) => ({
  metadata: { name },
  spec: { ...(sa ? { serviceAccountName: sa } : {}), nodeName: node, containers: [] },
});

async function extras(s: StrictServer, token: string): Promise<Record<string, string[]>> {
  const me = await s.as(token, 'POST', WHOAMI, REVIEW);
  expect(me.status, JSON.stringify(me.body)).to.equal(201);
  return me.body.status.userInfo.extra as Record<string, string[]>;
}

describe('apiserver: TokenRequest as kube-apiserver 1.30–1.33 mints and checks it', function () {
  this.timeout(20_000);
  let s: StrictServer;
  before(async () => {
    s = await strictServer({});
    for (const sa of ['sidecar', 'other'])
      await created(s, `${NS}/serviceaccounts`, { metadata: { name: sa } });
    await created(s, '/api/v1/nodes', { metadata: { name: 'node-a' } });
    await created(s, `${NS}/pods`, pod('runs-as-other', 'other', 'node-a'));
    await created(s, `${NS}/pods`, pod('runs-as-sidecar', 'sidecar', 'node-a'));
  });
  after(() => s.close());

  it('token.go: a Pod that runs as another service account is refused (400)', async () => {
    const r = await tokenFor(s, 'sidecar', {
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'runs-as-other',
    });
    expect(r.status).to.equal(400);
    expect(r.body.reason).to.equal('BadRequest');
    expect(r.body.message).to.equal(
      'cannot bind token for serviceaccount "sidecar" to pod running with different serviceaccount name.',
    );
  });

  it('token.go: a Pod without serviceAccountName runs as "default" (ServiceAccount admission)', async () => {
    await created(s, `${NS}/pods`, pod('no-sa', undefined, 'node-a'));
    const r = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Pod', name: 'no-sa' });
    expect(r.status).to.equal(400);
    expect(r.body.message).to.equal(
      'cannot bind token for serviceaccount "sidecar" to pod running with different serviceaccount name.',
    );
  });

  it('token.go: the own Pod is accepted; its token names the pod and its node', async () => {
    const r = await tokenFor(s, 'sidecar', {
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'runs-as-sidecar',
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    const x = await extras(s, r.body.status.token as string);
    expect(x['authentication.kubernetes.io/pod-name']).to.deep.equal(['runs-as-sidecar']);
    expect(x['authentication.kubernetes.io/node-name']).to.deep.equal(['node-a']);
  });

  it('token.go: a Pod whose Node is missing still gets the node name, without a uid', async () => {
    await created(s, `${NS}/pods`, pod('on-ghost', 'sidecar', 'node-ghost'));
    const r = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Pod', name: 'on-ghost' });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    const x = await extras(s, r.body.status.token as string);
    expect(x['authentication.kubernetes.io/node-name']).to.deep.equal(['node-ghost']);
    expect(x).not.to.have.property('authentication.kubernetes.io/node-uid');
  });

  it('token.go: an object of another kind or group is refused with its GroupVersionKind', async () => {
    const svc = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Service', name: 'x' });
    expect(svc.status).to.equal(400);
    expect(svc.body.reason).to.equal('BadRequest');
    expect(svc.body.message).to.equal('cannot bind token to object of type /v1, Kind=Service');
    const apps = await tokenFor(s, 'sidecar', { apiVersion: 'apps/v1', kind: 'Pod', name: 'x' });
    expect(apps.status).to.equal(400);
    expect(apps.body.message).to.equal('cannot bind token to object of type apps/v1, Kind=Pod');
  });

  it('token.go: a uid that does not match is a Conflict on the kind', async () => {
    const r = await tokenFor(s, 'sidecar', {
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'runs-as-sidecar',
      uid: 'not-the-uid',
    });
    expect(r.status).to.equal(409);
    expect(r.body.reason).to.equal('Conflict');
    expect(r.body.message).to.equal(
      'Operation cannot be fulfilled on Pod "runs-as-sidecar": the UID in the bound object reference (not-the-uid) does not match the UID in record. The object might have been deleted and then recreated',
    );
  });

  it('claims.go: a pod-bound token dies with its pod, also when a pod of that name comes back', async () => {
    await created(s, `${NS}/pods`, pod('short-lived', 'sidecar', 'node-a'));
    const r = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Pod', name: 'short-lived' });
    const token = r.body.status.token as string;
    expect((await s.as(token, 'POST', WHOAMI, REVIEW)).status).to.equal(201);
    await s.admin('DELETE', `${NS}/pods/short-lived`);
    await created(s, `${NS}/pods`, pod('short-lived', 'sidecar', 'node-a'));
    const after = await s.as(token, 'POST', WHOAMI, REVIEW);
    expect(after.status).to.equal(401);
    expect(after.body.message).to.equal('Unauthorized');
  });

  it('claims.go: a pod-bound token keeps its node claims after the Node is recreated (1.30–1.33 do not check them)', async () => {
    await created(s, '/api/v1/nodes', { metadata: { name: 'node-r' } });
    await created(s, `${NS}/pods`, pod('on-r', 'sidecar', 'node-r'));
    const r = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Pod', name: 'on-r' });
    const token = r.body.status.token as string;
    const before = await extras(s, token);
    await s.admin('DELETE', '/api/v1/nodes/node-r');
    const newUid = await created(s, '/api/v1/nodes', { metadata: { name: 'node-r' } });
    const x = await extras(s, token);
    expect(x['authentication.kubernetes.io/node-uid']).to.deep.equal(
      before['authentication.kubernetes.io/node-uid'],
    );
    expect(x['authentication.kubernetes.io/node-uid']).not.to.deep.equal([newUid]);
  });

  it('claims.go: a node-bound token dies with its node, also when a node of that name comes back', async () => {
    await created(s, '/api/v1/nodes', { metadata: { name: 'node-n' } });
    const r = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Node', name: 'node-n' });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    const token = r.body.status.token as string;
    expect((await s.as(token, 'POST', WHOAMI, REVIEW)).status).to.equal(201);
    await s.admin('DELETE', '/api/v1/nodes/node-n');
    await created(s, '/api/v1/nodes', { metadata: { name: 'node-n' } });
    expect((await s.as(token, 'POST', WHOAMI, REVIEW)).status).to.equal(401);
  });
});

describe('apiserver: --feature-gates ServiceAccountTokenNodeBinding', function () {
  this.timeout(20_000);

  it('off (as 1.30): Node binding refused with kube-apiserver 400', async () => {
    const s = await strictServer(
      {},
      { featureGates: parseFeatureGates('ServiceAccountTokenNodeBinding=false') },
    );
    try {
      await created(s, `${NS}/serviceaccounts`, { metadata: { name: 'sidecar' } });
      await created(s, '/api/v1/nodes', { metadata: { name: 'node-a' } });
      const r = await tokenFor(s, 'sidecar', { apiVersion: 'v1', kind: 'Node', name: 'node-a' });
      expect(r.status).to.equal(400);
      expect(r.body.reason).to.equal('BadRequest');
      expect(r.body.message).to.equal(
        'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled',
      );
    } finally {
      await s.close();
    }
  });

  it('parses Name=bool lists and refuses unknown gates and values', () => {
    expect(parseFeatureGates('')).to.deep.equal({ ServiceAccountTokenNodeBinding: true });
    expect(parseFeatureGates('ServiceAccountTokenNodeBinding=false')).to.deep.equal({
      ServiceAccountTokenNodeBinding: false,
    });
    expect(() => parseFeatureGates('NoSuchGate=true')).to.throw(
      'unrecognized feature gate: NoSuchGate',
    );
    expect(() => parseFeatureGates('ServiceAccountTokenNodeBinding=yes')).to.throw(
      'invalid value of ServiceAccountTokenNodeBinding=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
    );
    expect(() => parseFeatureGates('ServiceAccountTokenNodeBinding')).to.throw(
      'missing bool value for ServiceAccountTokenNodeBinding',
    );
  });
});

describe('service-account tokens: why a token is refused (claims.go messages)', () => {
  const objects = new Map<string, string>();
  const tokens = new ServiceAccountTokens((kind, ns, name) => {
    const uid = objects.get(`${kind}/${ns}/${name}`);
    return uid === undefined ? undefined : { uid };
  });
  beforeEach(() => {
    objects.clear();
    objects.set('ServiceAccount/kube-system/sidecar', 'sa-1');
    objects.set('Pod/kube-system/p', 'pod-1');
    objects.set('Node/undefined/n', 'node-1');
  });
  const sa = { name: 'sidecar', uid: 'sa-1' };

  it('names the uid that no longer matches', () => {
    const { token } = tokens.issue('kube-system', sa, {
      binding: { pod: { name: 'p', uid: 'pod-1' }, node: { name: 'n', uid: 'node-1' } },
    });
    expect(tokens.validate(token)).to.have.property('user');
    objects.set('Pod/kube-system/p', 'pod-2');
    expect(tokens.validate(token)).to.deep.equal({
      error: 'pod UID (pod-2) does not match service account pod ref claim (pod-1)',
    });
    objects.delete('Pod/kube-system/p');
    expect(tokens.validate(token)).to.deep.equal({
      error: 'service account token has been invalidated',
    });
  });

  it('a node-bound token: node UID, then the node gone', () => {
    const { token } = tokens.issue('kube-system', sa, {
      binding: { node: { name: 'n', uid: 'node-1' } },
    });
    objects.set('Node/undefined/n', 'node-2');
    expect(tokens.validate(token)).to.deep.equal({
      error: 'node UID (node-2) does not match service account node ref claim (node-1)',
    });
    objects.delete('Node/undefined/n');
    expect(tokens.validate(token)).to.deep.equal({
      error: 'service account token has been invalidated',
    });
  });

  it('the service account: uid, then gone', () => {
    const { token } = tokens.issue('kube-system', sa);
    objects.set('ServiceAccount/kube-system/sidecar', 'sa-2');
    expect(tokens.validate(token)).to.deep.equal({
      error: 'service account UID (sa-2) does not match claim (sa-1)',
    });
  });
});
