// pool_monitor_pod_ip_wait_seconds and the refused-request counter through a
// real sidecar: pods on the node in the local API server, CNI calls over HTTP.
import { expect } from 'chai';
import { cniBody, cniCall } from './leak-helpers.ts';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  sidecarOptions,
  sleep,
  startCluster,
  startSidecar,
  tempDir,
  waitFor,
  type Cluster,
  type TestSidecar,
} from './harness.ts';

function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('sidecar integration: pod IP wait metrics', function () {
  this.timeout(20_000);
  let c: Cluster;
  let sidecar: TestSidecar | undefined;
  const dir = tempDir();

  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await sidecar?.stop();
    await c?.close();
    dir.remove();
  });

  it('times each pod from its appearance to the request that got its address; counts refusals', async () => {
    const node = 'wait-1';
    await createNnc(
      c,
      node,
      { requestedIPCount: 1 },
      { scaler: DEFAULT_SCALER, networkContainers: [container([0])] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    await createPod(c, 'w1', node);
    await createPod(c, 'w2', node);
    await waitFor('pods seen', () => sidecar!.monitor.snapshot().demand === 2);
    await sleep(300);
    expect((await cniCall(sidecar.url, 'request', cniBody('w1'))).code).to.equal(0);
    await cniCall(sidecar.url, 'request', cniBody('w1')); // the CNI retries: not a second wait
    const refused = await cniCall(sidecar.url, 'request', cniBody('w2')); // one IP only
    expect(refused.code).to.equal(32);
    const text = await (await fetch(`${sidecar.url}/metrics`)).text();
    expect(metric(text, 'pool_monitor_pod_ip_wait_seconds_count')).to.equal(1);
    const sum = metric(text, 'pool_monitor_pod_ip_wait_seconds_sum')!;
    expect(sum).to.be.greaterThan(0.25).and.lessThan(10);
    expect(metric(text, 'pool_monitor_pod_ip_requests_refused_total')).to.equal(1);
  });
});
