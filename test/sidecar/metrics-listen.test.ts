// --metrics-listen: /metrics alone on an address of its own, never the node
// API; its flag parsed and checked at start.
import { expect } from 'chai';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startMetricsListener } from '../../src/sidecar/metrics-listen.ts';
import { resolveSidecarOptions } from '../../src/sidecar/options.ts';

describe('sidecar: the metrics listener', () => {
  it('serves /metrics and nothing else', async () => {
    const l = await startMetricsListener('127.0.0.1', 0, {
      contentType: 'text/plain; version=0.0.4',
      render: async () => 'pool_monitor_demand_ips 3\n',
    });
    try {
      const m = await fetch(l.url);
      expect(m.status).to.equal(200);
      expect(await m.text()).to.equal('pool_monitor_demand_ips 3\n');
      for (const path of ['/readyz', '/healthz', '/debug/pool', '/network/requestipconfigs', '/']) {
        const r = await fetch(`http://127.0.0.1:${l.port}${path}`);
        expect(r.status, path).to.equal(404);
      }
      const post = await fetch(l.url, { method: 'POST' });
      expect(post.status).to.equal(405);
    } finally {
      await l.close();
    }
  });

  it('a port in use fails the start', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
    try {
      const err = await startMetricsListener('127.0.0.1', port, {
        contentType: 'text/plain',
        render: async () => '',
      }).catch((e: unknown) => e as Error);
      expect(String(err)).to.contain('EADDRINUSE');
    } finally {
      holder.close();
    }
  });

  it('--metrics-listen is HOST:PORT, off when absent or empty, never the node API address', () => {
    const env = { NODENAME: 'n-1' };
    expect(resolveSidecarOptions({}, env).metricsListen).to.equal(undefined);
    expect(resolveSidecarOptions({ metricsListen: '' }, env).metricsListen).to.equal(undefined);
    expect(
      resolveSidecarOptions({ metricsListen: '10.0.0.4:10094' }, env).metricsListen,
    ).to.deep.equal({
      host: '10.0.0.4',
      port: 10094,
    });
    expect(() => resolveSidecarOptions({ metricsListen: '10.0.0.4' }, env)).to.throw(
      /--metrics-listen/,
    );
    expect(() => resolveSidecarOptions({ metricsListen: 'node-a:10094' }, env)).to.throw(
      /--metrics-listen/,
    );
    expect(() =>
      resolveSidecarOptions({ listen: '127.0.0.1:10092', metricsListen: '127.0.0.1:10092' }, env),
    ).to.throw(/must differ from --listen/);
  });
});
