import { expect } from 'chai';
import http from 'node:http';
import { silentLogger } from '../../src/log/logger.ts';
import { createNodeApi } from '../../src/nodeapi/server.ts';
import { parseProm, value } from '../metrics/prom-text.ts';
import { FakeStore, NC } from './fake-store.ts';
import { call, podRequest, post, startApi } from './harness.ts';
import type { Harness } from './harness.ts';

describe('node api: probes, metrics, debug', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startApi();
  });
  afterEach(() => h.close());

  it('GET /healthz is 200 while healthy and 503 when not', async () => {
    expect((await call(h.port, 'GET', '/healthz')).status).to.equal(200);
    h.state.healthy = false;
    const res = await call(h.port, 'GET', '/healthz');
    expect(res.status).to.equal(503);
    expect(res.json).to.deep.equal({ status: 'unhealthy' });
  });

  it('GET /readyz is 503 until ready, then 200', async () => {
    expect((await call(h.port, 'GET', '/readyz')).status).to.equal(503);
    h.state.ready = true;
    expect((await call(h.port, 'GET', '/readyz')).status).to.equal(200);
  });

  it('answers 503, not a crash, when a probe check throws', async () => {
    const api = await startApi(FakeStore.withIps(1), {
      health: {
        healthy: () => {
          throw new Error('boom');
        },
        ready: () => true,
      },
    });
    try {
      expect((await call(api.port, 'GET', '/healthz')).status).to.equal(503);
    } finally {
      await api.close();
    }
  });

  it('HEAD works on GET endpoints, without a body', async () => {
    const res = await call(h.port, 'HEAD', '/healthz');
    expect(res.status).to.equal(200);
    expect(res.text).to.equal('');
  });

  it('GET /metrics is Prometheus text with the CNS gauges and request counts', async () => {
    await post(h.port, '/network/requestipconfigs', podRequest(1));
    h.metrics.observePool({ request: 4, batch: 4, max: 250 }, h.store.counts());
    const res = await call(h.port, 'GET', '/metrics');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/plain/);
    const exp = parseProm(res.text);
    expect(value(exp, 'cx_ipam_pod_allocated_ips')).to.equal(1);
    expect(value(exp, 'cx_ipam_available_ips')).to.equal(3);
    const name = 'pool_monitor_node_api_requests_total';
    const labels = { method: 'POST', route: '/network/requestipconfigs', code: '200' };
    expect(value(exp, name, labels)).to.equal(1);
  });

  it('GET /debug/pool shows demand, scaler, exhaustion, target, request, counts, last reconcile', async () => {
    h.state.snapshot = {
      demand: 3,
      request: 16,
      target: 16,
      exhausted: false,
      scaler: { batch: 16, buffer: 0.5, max: 250 },
      lastReconcile: { at: Date.UTC(2026, 0, 2), outcome: 'scaled', delta: 16 },
      ready: true,
      dryRun: false,
      reconciles: 2,
      writes: 1,
      consecutiveFailures: 0,
      retryAt: undefined,
      damping: {
        policy: 'auto',
        target: 16,
        applied: 32,
        request: 32,
        heldBack: 16,
        deferred: true,
        recheckAt: Date.UTC(2026, 0, 2, 0, 1),
        why: { summary: 'keeping 32 for the target 16', kept: [{ level: 32 }] },
        account: {
          budget: 1.5,
          since: Date.UTC(2026, 0, 2),
          heldIdleIpSeconds: 900,
          cnsV2IdleIpSeconds: 800,
          cnsV2Writes: 7,
        },
      },
    };
    await post(h.port, '/network/requestipconfigs', podRequest(1));
    const res = await call(h.port, 'GET', '/debug/pool');
    expect(res.status).to.equal(200);
    expect(res.json).to.deep.equal({
      demand: 3,
      scaler: { batch: 16, buffer: 0.5, max: 250 },
      exhausted: false,
      target: 16,
      request: 16,
      ipCounts: { Available: 3, Assigned: 1, PendingRelease: 0, PendingProgramming: 0, total: 4 },
      // The harness gives no per-family view (the sidecar's is tested with it).
      families: {},
      lastReconcile: { at: '2026-01-02T00:00:00.000Z', outcome: 'scaled', delta: 16 },
      ready: true,
      dryRun: false,
      reconciles: 2,
      writes: 1,
      consecutiveFailures: 0,
      retryAt: null,
      releasePolicy: {
        policy: 'auto',
        target: 16,
        applied: 32,
        request: 32,
        heldBack: 16,
        recheckAt: '2026-01-02T00:01:00.000Z',
        why: 'keeping 32 for the target 16',
        details: { kept: [{ level: 32 }] },
        account: {
          budget: 1.5,
          since: '2026-01-02T00:00:00.000Z',
          heldIdleIpSeconds: 900,
          cnsV2IdleIpSeconds: 800,
          cnsV2Writes: 7,
          writes: 1,
          writesSaved: 6,
        },
      },
      advice: null,
    });
  });

  it('GET /debug/pool before the monitor started has nulls, not made-up figures', async () => {
    const res = await call(h.port, 'GET', '/debug/pool');
    expect(res.json).to.include({
      demand: null,
      target: null,
      request: null,
      scaler: null,
      releasePolicy: null,
      advice: null,
    });
  });

  it('unknown path is 404 and wrong method 405 with Allow, both JSON with a CNS response', async () => {
    const nf = await call(h.port, 'GET', '/nope');
    expect(nf.status).to.equal(404);
    expect(nf.json).to.have.nested.property('response.ReturnCode', 14);
    const wm = await call(h.port, 'GET', '/network/requestipconfigs');
    expect(wm.status).to.equal(405);
    expect(wm.headers.allow).to.equal('POST');
    expect(wm.json).to.have.nested.property('response.ReturnCode', 21);
    const wm2 = await call(h.port, 'POST', '/healthz', '{}');
    expect(wm2.status).to.equal(405);
    expect(wm2.headers.allow).to.equal('GET, HEAD');
  });

  it('a query string does not change the route', async () => {
    expect((await call(h.port, 'GET', '/healthz?verbose=1')).status).to.equal(200);
  });
});

describe('node api: close', () => {
  it('closes idle keep-alive sockets and finishes a request in flight', async () => {
    let release: (() => void) | undefined;
    let arrived: (() => void) | undefined;
    const gate = new Promise<void>((r) => (release = r));
    const inHandler = new Promise<void>((r) => (arrived = r));
    const h = await startApi(FakeStore.withIps(1), {
      metrics: {
        contentType: 'text/plain',
        render: async () => {
          arrived?.();
          await gate;
          return 'late 1\n';
        },
        observeHttp: () => {},
      },
    });
    const agent = new http.Agent({ keepAlive: true });
    try {
      // One idle keep-alive socket...
      expect((await call(h.port, 'GET', '/healthz', undefined, {}, agent)).status).to.equal(200);
      // ...and one request still being answered.
      const pending = call(h.port, 'GET', '/metrics');
      await inHandler;
      const closed = h.close();
      let closedYet = false;
      void closed.then(() => (closedYet = true));
      await new Promise((r) => setTimeout(r, 20));
      expect(closedYet).to.be.false;
      release?.();
      const res = await pending;
      expect(res.status).to.equal(200);
      expect(res.text).to.equal('late 1\n');
      await closed;
      expect(h.api.server.listening).to.be.false;
      // close is idempotent
      await h.close();
    } finally {
      agent.destroy();
    }
  });

  it('cuts requests that outlive the grace period', async () => {
    let arrived: (() => void) | undefined;
    const inHandler = new Promise<void>((r) => (arrived = r));
    const h = await startApi(FakeStore.withIps(1), {
      closeGraceMs: 30,
      metrics: {
        contentType: 'text/plain',
        render: () => {
          arrived?.();
          return new Promise(() => {});
        },
        observeHttp: () => {},
      },
    });
    const pending = call(h.port, 'GET', '/metrics').then(
      () => 'answered',
      () => 'cut',
    );
    await inHandler;
    await h.close();
    expect(await pending).to.equal('cut');
  });

  it('listen rejects with the error when the port is taken', async () => {
    const h = await startApi();
    const api = createNodeApi({
      store: FakeStore.withIps(0),
      health: { healthy: () => true, ready: () => true },
      pool: { debugPool: () => ({}) },
      metrics: { contentType: 'text/plain', render: async () => '', observeHttp: () => {} },
      logger: silentLogger(),
    });
    try {
      let error: unknown;
      try {
        await api.listen('127.0.0.1', h.port);
      } catch (err) {
        error = err;
      }
      expect(error).to.have.property('code', 'EADDRINUSE');
      await api.close();
    } finally {
      await h.close();
    }
  });
});

describe('node api: container info', () => {
  it('uses the network container of the IP for prefix, primary IP and gateway', async () => {
    const h = await startApi(FakeStore.withIps(1));
    try {
      const res = await post(h.port, '/network/requestipconfigs', podRequest(1));
      expect(res.json).to.deep.equal({
        podIPInfo: [
          {
            PodIPConfig: { IPAddress: '10.240.1.0', PrefixLength: 16 },
            NetworkContainerPrimaryIPConfig: {
              IPSubnet: { IPAddress: NC.primaryIP, PrefixLength: 16 },
              DNSServers: [],
              GatewayIPAddress: NC.defaultGateway,
            },
          },
        ],
        response: { ReturnCode: 0, Message: '' },
      });
    } finally {
      await h.close();
    }
  });
});
