// The node API's endpoints for a CNI plugin (cni-plugin/): the lookup of
// one interface's assignment (CHECK) and the attachments under an interface
// id prefix (GC); both behind the token like the other pod-naming
// endpoints, and fuzzed: garbage never changes the store.
import { expect } from 'chai';
import fc from 'fast-check';
import { FakeStore } from './fake-store.ts';
import { call, post, podRequest, startApi } from './harness.ts';
import type { Harness } from './harness.ts';

describe('node api: /network/ipconfig and /network/attachments', () => {
  let h: Harness;
  let store: FakeStore;
  beforeEach(async () => {
    store = FakeStore.withIps(4);
    h = await startApi(store);
    for (const n of [1, 2]) {
      const res = await post(h.port, '/network/requestipconfigs', {
        ...podRequest(n),
        podInterfaceID: `cni/net-a/c${n}/eth0`,
      });
      expect(res.status).to.equal(200);
    }
    await post(h.port, '/network/requestipconfigs', podRequest(3));
  });
  afterEach(() => h.close());

  it('looks one interface up as requestipconfigs answered it, 14 when it holds nothing', async () => {
    const asked = await post(h.port, '/network/requestipconfigs', {
      ...podRequest(1),
      podInterfaceID: 'cni/net-a/c1/eth0',
    });
    const res = await post(h.port, '/network/ipconfig', { podInterfaceID: 'cni/net-a/c1/eth0' });
    expect(res.status).to.equal(200);
    expect(res.json).to.deep.equal(asked.json);
    const none = await post(h.port, '/network/ipconfig', { podInterfaceID: 'cni/net-a/gone/eth0' });
    expect(none.status).to.equal(200);
    expect(none.json).to.have.nested.property('response.ReturnCode', 14);
    expect(none.json).to.have.property('podIPInfo').that.deep.equals([]);
  });

  it('lists the attachments under a prefix with their pods, every one without a prefix', async () => {
    const res = await post(h.port, '/network/attachments', { podInterfaceIDPrefix: 'cni/net-a/' });
    expect(res.status).to.equal(200);
    const body = res.json as { attachments: { podInterfaceID: string; podName: string }[] };
    expect(body.attachments.map((a) => a.podInterfaceID).sort()).to.deep.equal([
      'cni/net-a/c1/eth0',
      'cni/net-a/c2/eth0',
    ]);
    expect(body.attachments[0]).to.have.keys(
      'podInterfaceID',
      'infraContainerID',
      'podName',
      'podNamespace',
      'IPAddress',
      'IPAddresses',
    );
    const all = await post(h.port, '/network/attachments', {});
    expect((all.json as { attachments: unknown[] }).attachments).to.have.length(3);
  });

  it('needs the token when the sidecar has one', async () => {
    const locked = await startApi(FakeStore.withIps(1), {
      token: () => 'a-token-of-sixteen-chars',
    });
    try {
      for (const path of ['/network/ipconfig', '/network/attachments']) {
        const res = await call(locked.port, 'POST', path, '{"podInterfaceID":"x"}');
        expect(res.status, path).to.equal(401);
        const ok = await call(locked.port, 'POST', path, '{"podInterfaceID":"x"}', {
          'content-type': 'application/json',
          authorization: 'Bearer a-token-of-sixteen-chars',
        });
        expect(ok.status, path).to.equal(200);
      }
    } finally {
      await locked.close();
    }
  });

  it('refuses garbage with 400 and ReturnCode 23 and never changes the store (fast-check)', async () => {
    const body = fc.oneof(
      fc.string({ maxLength: 100 }),
      fc.json({ maxDepth: 3 }),
      fc.anything({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'undefined'),
      fc
        .oneof(
          fc.integer(),
          fc.boolean(),
          fc.constant(''),
          fc.constant(' '),
          fc.string({ minLength: 257, maxLength: 300 }),
          fc.constant('a\u0001b'),
        )
        .map((bad) => JSON.stringify({ podInterfaceID: bad, podInterfaceIDPrefix: bad })),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/network/ipconfig', '/network/attachments'),
        body,
        async (path, text) => {
          const before = store.snapshot();
          const res = await call(h.port, 'POST', path, text);
          expect([200, 400]).to.include(res.status);
          expect(res.json).to.be.an('object');
          if (res.status === 400)
            expect(res.json).to.have.nested.property('response.ReturnCode', 23);
          expect(store.snapshot()).to.deep.equal(before);
        },
      ),
      { numRuns: 200 },
    );
  });
});
