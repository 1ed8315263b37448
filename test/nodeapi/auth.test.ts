// The node API with --node-api-token-file: the IPAM endpoints and the
// endpoint that lists pod identities (/debug/ipaddresses) answer only a
// request carrying the token as a bearer; a refused request changes nothing.
// The probes, /metrics and /debug/pool (counts, no pod) stay open for the
// kubelet and Prometheus. Without a token the API is CNS's, open as before.
import { expect } from 'chai';
import { FakeStore } from './fake-store.ts';
import { call, podRequest, post, startApi, type Harness } from './harness.ts';

const TOKEN = 'node-api-token-0123456789abcdef';
const json = { 'content-type': 'application/json' };
const bearer = (t: string) => ({ ...json, authorization: `Bearer ${t}` });
const REQUEST = '/network/requestipconfigs';
const RELEASE = '/network/releaseipconfigs';
const LIST = '/debug/ipaddresses';
const ALL = JSON.stringify({ IPConfigStateFilter: ['Assigned', 'Available'] });

describe('nodeapi: bearer token on the IPAM and pod-identity endpoints', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startApi(FakeStore.withIps(4), { token: () => TOKEN });
    h.state.ready = true;
  });
  afterEach(() => h.close());

  for (const [name, headers] of [
    ['no Authorization', json],
    ['a wrong token', bearer('node-api-token-0123456789abcdeX')],
    ['another scheme', { ...json, authorization: `Basic ${TOKEN}` }],
  ] as const)
    it(`${name}: 401 on every protected endpoint, nothing assigned or listed`, async () => {
      for (const path of [REQUEST, RELEASE]) {
        const r = await call(h.port, 'POST', path, JSON.stringify(podRequest(1)), headers);
        expect(r.status, path).to.equal(401);
        expect(r.headers['www-authenticate']).to.equal('Bearer realm="pool-monitor node api"');
        expect(r.json).to.deep.equal({
          error: 'this endpoint needs the node API token as a bearer token',
          response: {
            ReturnCode: 23,
            Message: 'this endpoint needs the node API token as a bearer token',
          },
        });
      }
      const list = await call(h.port, 'POST', LIST, ALL, headers);
      expect(list.status).to.equal(401);
      expect(list.text).not.to.contain('pod-');
      expect(h.store.counts()).to.include({ Assigned: 0 });
      expect(h.changes).to.deep.equal([]);
    });

  it('the token: assigned, listed with its pod, released', async () => {
    const r = await call(h.port, 'POST', REQUEST, JSON.stringify(podRequest(1)), bearer(TOKEN));
    expect(r.status).to.equal(200);
    const list = await call(h.port, 'POST', LIST, ALL, bearer(TOKEN));
    expect(list.status).to.equal(200);
    expect(list.text).to.contain('pod-1');
    const rel = await call(h.port, 'POST', RELEASE, JSON.stringify(podRequest(1)), bearer(TOKEN));
    expect(rel.status).to.equal(200);
    expect(h.store.counts()).to.include({ Assigned: 0 });
  });

  it('probes, /metrics and /debug/pool need no token', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/debug/pool'])
      expect((await call(h.port, 'GET', path)).status, path).to.equal(200);
  });

  it('a token read anew (rotated) is the one asked for', async () => {
    let current = TOKEN;
    const rotating = await startApi(FakeStore.withIps(2), { token: () => current });
    rotating.state.ready = true;
    try {
      current = 'rotated-token-0123456789abcdefgh';
      const old = await call(rotating.port, 'POST', LIST, ALL, bearer(TOKEN));
      expect(old.status).to.equal(401);
      const now = await call(rotating.port, 'POST', LIST, ALL, bearer(current));
      expect(now.status).to.equal(200);
    } finally {
      await rotating.close();
    }
  });
});

describe('nodeapi: without a token the API stays CNS-compatible', () => {
  it('IPAM and /debug/ipaddresses answer without Authorization', async () => {
    const h = await startApi(FakeStore.withIps(2));
    h.state.ready = true;
    try {
      expect((await post(h.port, REQUEST, podRequest(1))).status).to.equal(200);
      const list = await call(h.port, 'POST', LIST, ALL);
      expect(list.status).to.equal(200);
      expect(list.text).to.contain('pod-1');
    } finally {
      await h.close();
    }
  });
});
