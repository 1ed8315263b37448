// --health-listen: /healthz and /readyz alone on an address of their own, for
// a kubelet probing a sidecar whose node API is on a unix socket; the flag
// parsed and checked at start.
import { expect } from 'chai';
import { startHealthListener } from '../../src/sidecar/health-listen.ts';
import { resolveSidecarOptions } from '../../src/sidecar/options.ts';

describe('sidecar: the health listener', () => {
  it('serves /healthz and /readyz as the node API does, and nothing else', async () => {
    const state = { healthy: true, ready: false };
    const l = await startHealthListener('127.0.0.1', 0, {
      healthy: () => state.healthy,
      ready: () => state.ready,
      notReadyReason: () => 'no NNC yet',
    });
    try {
      const get = async (path: string, method = 'GET') => {
        const r = await fetch(`${l.url}${path}`, { method });
        return { status: r.status, text: await r.text() };
      };
      expect(await get('/healthz')).to.deep.equal({ status: 200, text: '{"status":"ok"}' });
      expect(await get('/readyz')).to.deep.equal({
        status: 503,
        text: '{"status":"not ready","reason":"no NNC yet"}',
      });
      state.ready = true;
      state.healthy = false;
      expect(await get('/readyz')).to.deep.equal({ status: 200, text: '{"status":"ready"}' });
      expect(await get('/healthz')).to.deep.equal({
        status: 503,
        text: '{"status":"unhealthy"}',
      });
      for (const path of ['/metrics', '/debug/pool', '/network/requestipconfigs', '/'])
        expect((await get(path)).status, path).to.equal(404);
      expect((await get('/healthz', 'POST')).status).to.equal(405);
    } finally {
      await l.close();
    }
  });

  it('--health-listen is HOST:PORT, off when absent or empty, never another listener of the sidecar', () => {
    const env = { NODENAME: 'n-1' };
    expect(resolveSidecarOptions({}, env).healthListen).to.equal(undefined);
    expect(resolveSidecarOptions({ healthListen: '' }, env).healthListen).to.equal(undefined);
    expect(
      resolveSidecarOptions(
        { listen: 'unix:/run/pool-monitor/cns.sock', healthListen: '127.0.0.1:10095' },
        env,
      ).healthListen,
    ).to.deep.equal({ host: '127.0.0.1', port: 10095 });
    expect(() => resolveSidecarOptions({ healthListen: '127.0.0.1' }, env)).to.throw(
      /--health-listen: "127.0.0.1" is not HOST:PORT/,
    );
    expect(() => resolveSidecarOptions({ healthListen: 'node-a:10095' }, env)).to.throw(
      /--health-listen/,
    );
    expect(() =>
      resolveSidecarOptions({ listen: '127.0.0.1:10092', healthListen: '127.0.0.1:10092' }, env),
    ).to.throw('--health-listen must differ from --listen');
    expect(() =>
      resolveSidecarOptions(
        { metricsListen: '127.0.0.1:10094', healthListen: '127.0.0.1:10094' },
        env,
      ),
    ).to.throw('--health-listen must differ from --metrics-listen');
  });
});
