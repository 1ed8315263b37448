// The fulfiller's --listen endpoints over real HTTP: /healthz, /readyz and
// /metrics from its own registry (nodes by state, allocations, releases,
// status writes and conflicts, queue depth, leader, reconcile duration), and
// a backend's own series in the same registry.
import { expect } from 'chai';
import { Counter } from 'prom-client';
import { CidrBackend } from '../../src/fulfiller/cidr-backend.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { parseListen } from '../../src/fulfiller/http.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { NNC_PLURAL } from '../../src/nnc/types.ts';
import { parseProm, value } from '../metrics/prom-text.ts';
import { strictCluster } from '../support/rbac.ts';
import { NNC } from '../support/test-cluster.ts';
import { waitFor } from '../support/wait.ts';

describe('fulfiller: --listen endpoints and metrics', function () {
  this.timeout(20_000);

  it('parses --listen and refuses anything but HOST:PORT', () => {
    expect(parseListen('127.0.0.1:10093')).to.deep.equal({ host: '127.0.0.1', port: 10093 });
    expect(parseListen('0.0.0.0:0')).to.deep.equal({ host: '0.0.0.0', port: 0 });
    expect(parseListen('[::1]:9')).to.deep.equal({ host: '::1', port: 9 });
    for (const bad of ['10093', 'host:', ':80', 'h:99999', 'a:b'])
      expect(() => parseListen(bad), bad).to.throw(/--listen must be HOST:PORT/);
  });

  it('serves probes and the fulfiller metrics, a backend series included', async () => {
    // The fulfiller as its service account, with what manifests/ grants it.
    const cluster = await strictCluster();
    const { server, objects: api } = cluster;
    // The exhaustion forecast after 50 ms of history instead of a minute.
    const config = makeFulfillerConfig({
      subnet: '10.240.0.0/24',
      minIntervalMs: 0,
      forecast: { minSpanMs: 50 },
    });
    let calls: Counter | undefined;
    const running = await startFulfiller({
      kc: await cluster.fulfillerKubeConfig(),
      config,
      logger: silentLogger(),
      listen: { host: '127.0.0.1', port: 0 },
      defaultMetrics: false,
      backend: ({ addresses, registry }) => {
        calls = new Counter({
          name: 'pool_monitor_fulfiller_backend_calls_total',
          help: 'test',
          registers: [registry],
        });
        const cidr = new CidrBackend({ cidr: config.subnet }, addresses);
        return {
          kind: cidr.kind,
          subnets: () => cidr.subnets(),
          families: () => cidr.families(),
          apply: (node, change) => {
            calls!.inc();
            return cidr.apply(node, change);
          },
          releaseAll: (node, container) => cidr.releaseAll(node, container),
        };
      },
    });
    try {
      const url = running.http!.url;
      const forecast = 'pool_monitor_fulfiller_subnet_exhaustion_forecast_seconds';
      const subnet = { subnet: 'subnet-10-240-0-0-24' };
      // Nothing allocated yet: not filling up (once the first list is in: the
      // fulfiller waits for its CRDs and its watches first).
      await waitFor('the forecast series', async () =>
        value(parseProm(await (await fetch(`${url}/metrics`)).text()), forecast, subnet) ===
        Infinity
          ? true
          : undefined,
      );
      await cluster.addNode('node-1');
      await waitFor('NNC created', () => cluster.getNnc('node-1'));
      server.faults.inject({
        verb: 'update',
        resource: NNC_PLURAL,
        subresource: 'status',
        status: 409,
      });
      // The fulfiller may write the new NNC's status between our read and our
      // write: read again and retry on our own 409, as any client would.
      await waitFor('spec written', async () => {
        const nnc = await api.getNamespacedCustomObject({ ...NNC, name: 'node-1' });
        try {
          return await api.replaceNamespacedCustomObject({
            ...NNC,
            name: 'node-1',
            body: { ...(nnc as object), spec: { requestedIPCount: 8 } },
          });
        } catch (err) {
          if ((err as { code?: number }).code === 409) return undefined;
          throw err;
        }
      });
      await cluster.nncWithIps('node-1', 8);
      await running.fulfiller.whenIdle();

      expect((await fetch(`${url}/healthz`)).status).to.equal(200);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).to.equal(200);
      expect(await ready.json()).to.deep.equal({ ready: true, leader: true, stopping: false });
      expect((await fetch(`${url}/nope`)).status).to.equal(404);
      expect((await fetch(`${url}/metrics`, { method: 'POST' })).status).to.equal(405);

      const res = await fetch(`${url}/metrics`);
      expect(res.headers.get('content-type')).to.match(/^text\/plain/);
      const m = parseProm(await res.text());
      const p = 'pool_monitor_fulfiller_';
      expect(value(m, `${p}nodes`, { state: 'Updated' })).to.equal(1);
      expect(value(m, `${p}nodes`, { state: 'SubnetFull' })).to.equal(0);
      expect(value(m, `${p}ips_allocated_total`)).to.equal(8);
      expect(value(m, `${p}ips_released_total`)).to.equal(0);
      expect(value(m, `${p}status_writes_total`, { result: 'success' })).to.be.at.least(1);
      // The injected 409, and maybe a real one: our spec write can race the first status write.
      expect(value(m, `${p}status_writes_total`, { result: 'conflict' })).to.be.at.least(1);
      expect(value(m, `${p}nnc_lifecycle_total`, { action: 'created' })).to.equal(1);
      expect(value(m, `${p}queue_depth`)).to.equal(0);
      expect(value(m, `${p}leader`)).to.equal(1);
      expect(value(m, `${p}subnet_free_ips`, { subnet: 'subnet-10-240-0-0-24' })).to.equal(251 - 9);
      expect(value(m, `${p}address_conflicts`)).to.equal(0);
      // 9 addresses (primary and 8 secondaries) gone in well under 20 s: 242 left, finite time.
      const left = value(m, forecast, subnet)!;
      expect(left)
        .to.be.greaterThan(0)
        .and.lessThan((242 / 9) * 20);
      const reconciles = m.samples.filter((s) => s.name === `${p}reconcile_duration_seconds_count`);
      expect(reconciles.reduce((n, s) => n + s.value, 0)).to.be.at.least(1);
      expect(value(m, `${p}backend_calls_total`)).to.be.at.least(1);
      expect(m.samples.some((s) => s.name.startsWith('process_'))).to.equal(false);
    } finally {
      await running.stop();
      await cluster.close();
    }
    const closed = await fetch(`${running.http!.url}/healthz`).catch(() => 'refused');
    expect(closed).to.equal('refused');
  });
});
