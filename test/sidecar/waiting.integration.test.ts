// Why a sidecar waits, said as a new user needs it: against the real API
// server, a sidecar started before its NNC exists says what it waits for at
// each stage of the fulfiller's work (created, status, scaler, dynamic
// container) on an info line and in /readyz's 503 body, repeats an unchanged
// reason only after its interval, and never warns or records a Warning Event
// for an NNC that is merely unfinished.
import { expect } from 'chai';
import {
  container,
  createNnc,
  DEFAULT_SCALER,
  NS,
  setStatus,
  sidecarOptions,
  startCluster,
  startSidecar,
  tempDir,
  waitFor,
  type Cluster,
  type TestSidecar,
} from './harness.ts';

describe('sidecar integration: it says why it waits', function () {
  this.timeout(20_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let sidecar: TestSidecar | undefined;

  before(async () => {
    c = await startCluster();
    dir = tempDir();
  });
  after(async () => {
    await sidecar?.stop();
    dir.remove();
    await c?.close();
  });

  const readyz = async (): Promise<{
    status: number;
    body: { status: string; reason?: string };
  }> => {
    const res = await fetch(`${sidecar!.url}/readyz`);
    return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
  };
  const said = (pattern: RegExp): boolean =>
    sidecar!.logs.find('waiting').some((r) => r.level === 'info' && pattern.test(String(r.reason)));
  const stage = async (pattern: RegExp): Promise<void> => {
    await waitFor(`an info line ${pattern}`, () => said(pattern));
    const r = await readyz();
    expect(r.status).to.equal(503);
    expect(r.body.status).to.equal('not ready');
    expect(r.body.reason).to.match(pattern);
  };

  it('names each stage, then gets ready, with no warning on the way', async () => {
    const node = 'wait-1';
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path), { waitNoticeMs: 300 });
    await stage(/^waiting for NodeNetworkConfig kube-system\/wait-1 to be created/);
    // Unchanged, it is said again, but not more often than the interval.
    const created = () =>
      sidecar!.logs.find('waiting').filter((r) => /to be created/.test(String(r.reason)));
    await waitFor('two repeats', () => created().length >= 3, 5000);
    const lines = created();
    for (let i = 1; i < lines.length; i += 1) {
      const gap = Date.parse(String(lines[i]!.ts)) - Date.parse(String(lines[i - 1]!.ts));
      expect(gap).to.be.at.least(295);
    }
    // The lists completing one by one are not said: the first line is the NNC.
    expect(String(sidecar.logs.find('waiting')[0]!.reason)).to.match(/to be created/);

    await createNnc(c, node, { requestedIPCount: 0 });
    await stage(/^waiting for the fulfiller to write the status of NodeNetworkConfig/);
    await setStatus(c, node, { networkContainers: [container([0, 1, 2, 3])] });
    await stage(/^waiting for status\.scaler of NodeNetworkConfig kube-system\/wait-1/);
    await setStatus(c, node, { scaler: DEFAULT_SCALER, networkContainers: [] });
    await stage(/^waiting for a dynamic network container/);
    await setStatus(c, node, {
      scaler: DEFAULT_SCALER,
      networkContainers: [container([0, 1, 2, 3])],
    });
    await waitFor('ready', async () => (await readyz()).status === 200);
    expect((await readyz()).body).to.deep.equal({ status: 'ready' });

    // Nothing of this was a warning: no log, no Warning Event on the NNC.
    const warnings = sidecar.logs.records.filter((r) => r.level === 'warn' || r.level === 'error');
    expect(warnings.map((w) => w.msg)).to.deep.equal([]);
    const events = await c.core.listNamespacedEvent({ namespace: NS });
    expect(events.items.filter((e) => e.type === 'Warning').map((e) => e.reason)).to.deep.equal([]);
  });
});
