// The local API server's pod GC over HTTP: a pod bound to a Node that is
// gone is marked Failed (DisruptionTarget, DeletionByPodGC) and deleted once
// the Node has been missing for the quarantine (shortened here), not before;
// pods on Nodes that exist, or come back in time, are left alone.
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { call, openWatch, withCrds } from './helpers.ts';

const NODES = '/api/v1/nodes';
const PODS = '/api/v1/namespaces/default/pods';
const QUARANTINE_MS = 1200;

function boundPod(name: string, node: string, finalizers?: string[]): unknown {
  return {
    metadata: { name, ...(finalizers ? { finalizers } : {}) },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }] },
  };
}

async function post(server: ApiServer, path: string, body: unknown): Promise<void> {
  const r = await call(server, 'POST', path, body);
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
}

describe('cluster: pod GC of pods bound to missing Nodes', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds({ podGcOrphanMs: QUARANTINE_MS });
  });
  afterEach(() => server.close());

  it('deletes a deleted Node’s pods after the quarantine, not before, marked Failed first', async () => {
    await post(server, NODES, { metadata: { name: 'n1' } });
    await post(server, NODES, { metadata: { name: 'n2' } });
    await post(server, PODS, boundPod('on-n1', 'n1'));
    await post(server, PODS, boundPod('on-n2', 'n2'));
    await post(server, PODS, {
      metadata: { name: 'unbound' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    const watch = await openWatch(server, `${PODS}?watch=true&fieldSelector=metadata.name=on-n1`);
    try {
      const deletedAt = Date.now();
      expect((await call(server, 'DELETE', `${NODES}/n1`)).status).to.equal(200);
      await sleep(QUARANTINE_MS / 4);
      expect((await call(server, 'GET', `${PODS}/on-n1`)).status).to.equal(200);
      await waitFor(
        'on-n1 deleted',
        async () => (await call(server, 'GET', `${PODS}/on-n1`)).status === 404,
        QUARANTINE_MS + 8000,
      );
      expect(Date.now() - deletedAt).to.be.at.least(QUARANTINE_MS);
      const events = await watch.waitFor(2);
      const modified = events.find((e) => e.type === 'MODIFIED');
      expect(modified?.object.status.phase).to.equal('Failed');
      const cond = (modified?.object.status.conditions as Record<string, unknown>[]).find(
        (c) => c.type === 'DisruptionTarget',
      );
      expect(cond).to.include({
        status: 'True',
        reason: 'DeletionByPodGC',
        message: 'PodGC: node no longer exists',
      });
      expect(events.at(-1)?.type).to.equal('DELETED');
    } finally {
      watch.close();
    }
    expect((await call(server, 'GET', `${PODS}/on-n2`)).status).to.equal(200);
    expect((await call(server, 'GET', `${PODS}/unbound`)).status).to.equal(200);
  });

  it('deletes a pod bound to a Node that never existed, after the quarantine', async () => {
    const created = Date.now();
    await post(server, PODS, boundPod('nowhere', 'no-such-node'));
    await sleep(QUARANTINE_MS / 4);
    expect((await call(server, 'GET', `${PODS}/nowhere`)).status).to.equal(200);
    await waitFor(
      'nowhere deleted',
      async () => (await call(server, 'GET', `${PODS}/nowhere`)).status === 404,
      QUARANTINE_MS + 8000,
    );
    expect(Date.now() - created).to.be.at.least(QUARANTINE_MS);
  });

  it('leaves the pods of a Node that exists, or comes back within the quarantine', async () => {
    await post(server, NODES, { metadata: { name: 'stays' } });
    await post(server, NODES, { metadata: { name: 'back' } });
    await post(server, PODS, boundPod('p-stays', 'stays'));
    await post(server, PODS, boundPod('p-back', 'back'));
    expect((await call(server, 'DELETE', `${NODES}/back`)).status).to.equal(200);
    await post(server, NODES, { metadata: { name: 'back' } });
    await sleep(QUARANTINE_MS * 2);
    expect((await call(server, 'GET', `${PODS}/p-stays`)).status).to.equal(200);
    const p = await call(server, 'GET', `${PODS}/p-back`);
    expect(p.status).to.equal(200);
    expect(p.body.status.phase).to.equal('Pending');
  });

  it('a pod with a finalizer is marked Failed and terminating, and stays until the finalizer goes', async () => {
    await post(server, NODES, { metadata: { name: 'nf' } });
    await post(server, PODS, boundPod('held', 'nf', ['example.com/hold']));
    expect((await call(server, 'DELETE', `${NODES}/nf`)).status).to.equal(200);
    const held = await waitFor(
      'held marked for deletion',
      async () => {
        const g = await call(server, 'GET', `${PODS}/held`);
        return g.body.metadata?.deletionTimestamp ? g.body : undefined;
      },
      QUARANTINE_MS + 8000,
    );
    expect(held.status.phase).to.equal('Failed');
    expect(held.metadata.deletionGracePeriodSeconds).to.equal(0);
    await sleep(200);
    expect((await call(server, 'GET', `${PODS}/held`)).status).to.equal(200);
    const r = await call(
      server,
      'PATCH',
      `${PODS}/held`,
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    expect(r.status).to.equal(200);
    expect((await call(server, 'GET', `${PODS}/held`)).status).to.equal(404);
  });
});

describe('cluster: pod GC turned off', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds({ podGc: false, podGcOrphanMs: 100 });
  });
  afterEach(() => server.close());

  it('leaves pods bound to a missing Node', async () => {
    await post(server, PODS, boundPod('kept', 'gone-node'));
    await sleep(600);
    expect((await call(server, 'GET', `${PODS}/kept`)).status).to.equal(200);
  });
});
