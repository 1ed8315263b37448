// The local API server's owner-reference garbage collector and DELETE's
// propagation policies, over HTTP: Background, Foreground, Orphan, the legacy
// orphanDependents, dependents with finalizers of their own, Node → NNC, and
// kube-apiserver's refusals of malformed ownerReferences.
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { call, NNC_PATH, nnc, withCrds } from './helpers.ts';

const NODES = '/api/v1/nodes';
const PODS = '/api/v1/namespaces/default/pods';
const DEPLOYS = '/apis/apps/v1/namespaces/default/deployments';
/** Generous bound for what the collector does "within about a second" on a slow, shared machine. */
const GC_BOUND_MS = 5000;

interface Ref {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

function pod(name: string, refs: Ref[] = [], extra: Record<string, unknown> = {}): unknown {
  return {
    metadata: { name, ownerReferences: refs, ...extra },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  };
}

function deployment(name: string): unknown {
  return {
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      },
    },
  };
}

async function create(server: ApiServer, path: string, body: unknown): Promise<Ref> {
  const r = await call(server, 'POST', path, body);
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return {
    apiVersion: r.body.apiVersion as string,
    kind: r.body.kind as string,
    name: r.body.metadata.name as string,
    uid: r.body.metadata.uid as string,
  };
}

async function gone(server: ApiServer, path: string, timeoutMs = GC_BOUND_MS): Promise<void> {
  await waitFor(
    `${path} gone`,
    async () => (await call(server, 'GET', path)).status === 404,
    timeoutMs,
  );
}

describe('cluster: garbage collector', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds();
  });
  afterEach(() => server.close());

  it('Background (the default): the owner goes at once, its dependents shortly after', async () => {
    const owner = await create(server, DEPLOYS, deployment('web'));
    await create(server, PODS, pod('web-1', [{ ...owner, controller: true }]));
    await create(server, PODS, pod('web-2', [owner]));
    await create(server, PODS, pod('other'));
    const d = await call(server, 'DELETE', `${DEPLOYS}/web`);
    expect(d.status).to.equal(200);
    expect((await call(server, 'GET', `${DEPLOYS}/web`)).status).to.equal(404);
    await gone(server, `${PODS}/web-1`);
    await gone(server, `${PODS}/web-2`);
    await sleep(100);
    expect((await call(server, 'GET', `${PODS}/other`)).status).to.equal(200);
  });

  it('keeps a dependent that has another live owner, without the reference to the gone one', async () => {
    const a = await create(server, DEPLOYS, deployment('a'));
    const b = await create(server, DEPLOYS, deployment('b'));
    await create(server, PODS, pod('shared', [a, b]));
    expect((await call(server, 'DELETE', `${DEPLOYS}/a`)).status).to.equal(200);
    const refs = await waitFor(
      'the reference to a removed',
      async () => {
        const p = await call(server, 'GET', `${PODS}/shared`);
        const r = p.body.metadata.ownerReferences as Ref[] | undefined;
        return r?.length === 1 ? r : undefined;
      },
      GC_BOUND_MS,
    );
    expect(refs[0]?.uid).to.equal(b.uid);
    // Its last owner gone, it goes too.
    expect((await call(server, 'DELETE', `${DEPLOYS}/b`)).status).to.equal(200);
    await gone(server, `${PODS}/shared`);
  });

  it('deletes a dependent whose owner never existed or exists under another uid', async () => {
    const real = await create(server, DEPLOYS, deployment('real'));
    await create(
      server,
      PODS,
      pod('stale', [{ ...real, uid: '3b1f0c9e-0000-4000-8000-000000000000' }]),
    );
    await create(
      server,
      PODS,
      pod('phantom', [{ ...real, name: 'phantom', uid: '3b1f0c9e-0000-4000-8000-000000000001' }]),
    );
    await create(server, PODS, pod('kept', [real]));
    await gone(server, `${PODS}/stale`);
    await gone(server, `${PODS}/phantom`);
    expect((await call(server, 'GET', `${PODS}/kept`)).status).to.equal(200);
  });

  it('Foreground: blocking dependents go first, the owner waits with foregroundDeletion', async () => {
    const owner = await create(server, DEPLOYS, deployment('fg'));
    // A blocking dependent that holds a finalizer: the owner waits for it.
    await create(
      server,
      PODS,
      pod('fg-held', [{ ...owner, blockOwnerDeletion: true }], {
        finalizers: ['example.com/hold'],
      }),
    );
    await create(server, PODS, pod('fg-free', [owner]));
    const d = await call(server, 'DELETE', `${DEPLOYS}/fg`, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Foreground',
    });
    expect(d.status).to.equal(200);
    expect(d.body.metadata.finalizers).to.deep.equal(['foregroundDeletion']);
    expect(d.body.metadata.deletionTimestamp).to.be.a('string');
    // The non-blocking dependent is deleted; the held one is only marked.
    await gone(server, `${PODS}/fg-free`);
    const held = await waitFor(
      'fg-held marked for deletion',
      async () => {
        const p = await call(server, 'GET', `${PODS}/fg-held`);
        return p.body.metadata?.deletionTimestamp ? p.body : undefined;
      },
      GC_BOUND_MS,
    );
    await sleep(300);
    const waiting = await call(server, 'GET', `${DEPLOYS}/fg`);
    expect(waiting.status).to.equal(200);
    expect(waiting.body.metadata.finalizers).to.deep.equal(['foregroundDeletion']);
    // The dependent's finalizer removed: it goes, then the owner.
    const r = await call(
      server,
      'PATCH',
      `${PODS}/fg-held`,
      { metadata: { finalizers: null, resourceVersion: held.metadata.resourceVersion } },
      'application/merge-patch+json',
    );
    expect(r.status).to.equal(200);
    await gone(server, `${PODS}/fg-held`);
    await gone(server, `${DEPLOYS}/fg`);
  });

  it('Foreground from the query, on an owner without dependents: gone once the collector looked', async () => {
    await create(server, DEPLOYS, deployment('alone'));
    const d = await call(server, 'DELETE', `${DEPLOYS}/alone?propagationPolicy=Foreground`);
    expect(d.status).to.equal(200);
    expect(d.body.metadata.finalizers).to.deep.equal(['foregroundDeletion']);
    await gone(server, `${DEPLOYS}/alone`);
  });

  it('Orphan: the dependents stay without the reference, then the owner goes', async () => {
    const owner = await create(server, DEPLOYS, deployment('orph'));
    await create(server, PODS, pod('orph-1', [{ ...owner, controller: true }]));
    const d = await call(server, 'DELETE', `${DEPLOYS}/orph`, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Orphan',
    });
    expect(d.status).to.equal(200);
    expect(d.body.metadata.finalizers).to.deep.equal(['orphan']);
    await gone(server, `${DEPLOYS}/orph`);
    const p = await call(server, 'GET', `${PODS}/orph-1`);
    expect(p.status).to.equal(200);
    expect(p.body.metadata.ownerReferences).to.equal(undefined);
    await sleep(200);
    expect((await call(server, 'GET', `${PODS}/orph-1`)).status).to.equal(200);
  });

  it('the legacy orphanDependents: true orphans; false is answered 202 while the owner waits for its own finalizer', async () => {
    const o1 = await create(server, DEPLOYS, deployment('legacy-1'));
    await create(server, PODS, pod('legacy-1-a', [o1]));
    const d1 = await call(server, 'DELETE', `${DEPLOYS}/legacy-1?orphanDependents=true`);
    expect(d1.status).to.equal(200);
    await gone(server, `${DEPLOYS}/legacy-1`);
    expect(
      (await call(server, 'GET', `${PODS}/legacy-1-a`)).body.metadata.ownerReferences,
    ).to.equal(undefined);

    const o2 = await create(server, DEPLOYS, {
      ...(deployment('legacy-2') as Record<string, unknown>),
      metadata: { name: 'legacy-2', finalizers: ['example.com/hold'] },
    });
    await create(server, PODS, pod('legacy-2-a', [o2]));
    const d2 = await call(server, 'DELETE', `${DEPLOYS}/legacy-2`, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      orphanDependents: false,
    });
    expect(d2.status).to.equal(202);
    expect(d2.body.metadata.finalizers).to.deep.equal(['example.com/hold']);
    // Its own finalizer keeps the owner (marked, not deleting its dependents
    // first): the dependent stays until the owner is really gone.
    await sleep(300);
    expect((await call(server, 'GET', `${PODS}/legacy-2-a`)).status).to.equal(200);
    const r = await call(
      server,
      'PATCH',
      `${DEPLOYS}/legacy-2`,
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    expect(r.status).to.equal(200);
    await gone(server, `${DEPLOYS}/legacy-2`);
    await gone(server, `${PODS}/legacy-2-a`);
  });

  it('refuses a propagationPolicy it does not know, and one beside orphanDependents (422)', async () => {
    await create(server, DEPLOYS, deployment('x'));
    const bad = await call(server, 'DELETE', `${DEPLOYS}/x?propagationPolicy=Sideways`);
    expect(bad.status).to.equal(422);
    expect(bad.body.message).to.equal(
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"',
    );
    const both = await call(server, 'DELETE', `${DEPLOYS}/x`, {
      propagationPolicy: 'Orphan',
      orphanDependents: true,
    });
    expect(both.status).to.equal(422);
    expect(both.body.details.causes[0].field).to.equal('propagationPolicy');
    expect((await call(server, 'GET', `${DEPLOYS}/x`)).status).to.equal(200);
  });

  it('Node → NNC: a deleted Node takes its NNC in kube-system with it', async () => {
    const node = await create(server, NODES, { metadata: { name: 'node-a' } });
    await create(server, NODES, { metadata: { name: 'node-b' } });
    const body = nnc('node-a') as { metadata: Record<string, unknown> };
    body.metadata.ownerReferences = [node];
    await create(server, NNC_PATH, body);
    await create(server, NNC_PATH, nnc('node-b'));
    const started = Date.now();
    expect((await call(server, 'DELETE', `${NODES}/node-a`)).status).to.equal(200);
    await gone(server, `${NNC_PATH}/node-a`, 3000);
    const took = Date.now() - started;
    expect(took).to.be.lessThan(3000);
    expect((await call(server, 'GET', `${NNC_PATH}/node-b`)).status).to.equal(200);
  });

  it('a dependent with a finalizer of its own stays terminating until the finalizer is removed', async () => {
    const node = await create(server, NODES, { metadata: { name: 'node-f' } });
    const body = nnc('node-f') as { metadata: Record<string, unknown> };
    body.metadata.ownerReferences = [{ ...node, blockOwnerDeletion: true, controller: true }];
    body.metadata.finalizers = ['acn.azure.com/pool-monitor'];
    await create(server, NNC_PATH, body);
    expect((await call(server, 'DELETE', `${NODES}/node-f`)).status).to.equal(200);
    const marked = await waitFor(
      'the NNC marked for deletion',
      async () => {
        const g = await call(server, 'GET', `${NNC_PATH}/node-f`);
        return g.body.metadata?.deletionTimestamp ? g.body : undefined;
      },
      GC_BOUND_MS,
    );
    expect(marked.metadata.finalizers).to.deep.equal(['acn.azure.com/pool-monitor']);
    await sleep(500);
    const still = await call(server, 'GET', `${NNC_PATH}/node-f`);
    expect(still.status).to.equal(200);
    expect(still.body.metadata.deletionTimestamp).to.equal(marked.metadata.deletionTimestamp);
    const r = await call(
      server,
      'PATCH',
      `${NNC_PATH}/node-f`,
      { metadata: { finalizers: [] } },
      'application/merge-patch+json',
    );
    expect(r.status).to.equal(200);
    await gone(server, `${NNC_PATH}/node-f`, 2000);
  });

  it('a namespaced owner owns only dependents of its own namespace', async () => {
    const owner = await create(server, DEPLOYS, deployment('ns-owner'));
    // kube-system has no Deployment of that name: the reference is dangling there.
    const body = nnc('ns-dep') as { metadata: Record<string, unknown> };
    body.metadata.ownerReferences = [owner];
    await create(server, NNC_PATH, body);
    await gone(server, `${NNC_PATH}/ns-dep`);
    expect((await call(server, 'GET', `${DEPLOYS}/ns-owner`)).status).to.equal(200);
  });

  it('refuses ownerReferences kube-apiserver refuses (422, ValidateOwnerReferences)', async () => {
    const noUid = await call(
      server,
      'POST',
      PODS,
      pod('p', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'd', uid: '' }]),
    );
    expect(noUid.status).to.equal(422);
    expect(noUid.body.details.causes).to.deep.include({
      reason: 'FieldValueInvalid',
      field: 'metadata.ownerReferences.uid',
      message: 'Invalid value: "": uid must not be empty',
    });
    expect(noUid.body.message).to.include(
      'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    );
    const missing = await call(server, 'POST', PODS, pod('p', [{ uid: 'u' } as unknown as Ref]));
    expect(missing.status).to.equal(422);
    expect(
      (missing.body.details.causes as { field: string }[]).map((c) => c.field).sort(),
    ).to.deep.equal([
      'metadata.ownerReferences.apiVersion',
      'metadata.ownerReferences.kind',
      'metadata.ownerReferences.name',
    ]);
    const ref = (name: string): Ref => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name,
      uid: `uid-${name}`,
      controller: true,
    });
    const two = await call(server, 'POST', PODS, pod('p', [ref('a'), ref('b')]));
    expect(two.status).to.equal(422);
    expect(two.body.message).to.include(
      'Only one reference can have Controller set to true. Found "true" in references for Deployment/a and Deployment/b',
    );
    const event = await call(
      server,
      'POST',
      PODS,
      pod('p', [{ apiVersion: 'v1', kind: 'Event', name: 'e', uid: 'u' }]),
    );
    expect(event.status).to.equal(422);
    expect(event.body.message).to.include('/v1, Kind=Event is disallowed from being an owner');
    // On update too.
    await create(server, PODS, pod('ok'));
    const up = await call(
      server,
      'PATCH',
      `${PODS}/ok`,
      { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: '', uid: 'u' }] } },
      'application/merge-patch+json',
    );
    expect(up.status).to.equal(422);
    expect(up.body.message).to.include(
      'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
    );
  });
});

describe('cluster: garbage collector turned off', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds({ garbageCollector: false });
  });
  afterEach(() => server.close());

  it('leaves dependents of a deleted owner, and Foreground adds no finalizer', async () => {
    const owner = await create(server, DEPLOYS, deployment('off'));
    await create(server, PODS, pod('off-1', [owner]));
    expect((await call(server, 'DELETE', `${DEPLOYS}/off`)).status).to.equal(200);
    await sleep(300);
    expect((await call(server, 'GET', `${PODS}/off-1`)).status).to.equal(200);
    await create(server, DEPLOYS, deployment('off-fg'));
    const d = await call(server, 'DELETE', `${DEPLOYS}/off-fg?propagationPolicy=Foreground`);
    expect(d.status).to.equal(200);
    expect((await call(server, 'GET', `${DEPLOYS}/off-fg`)).status).to.equal(404);
  });
});
