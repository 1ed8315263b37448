// The running sidecar's node API against the real store and the local API
// server: probes, /debug/pool, /metrics, CNI request/release, Events on the
// NNC, and bad input (scaler values, NNCs without status or dynamic
// containers, malformed pods) that must warn, not crash, and change nothing.
import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/index.ts';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  getNnc,
  NS,
  setStatus,
  sidecarOptions,
  sleep,
  startCluster,
  startSidecar,
  tempDir,
  waitFor,
  type Cluster,
  type TestSidecar,
} from './harness.ts';

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function post(url: string, body: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const ipReq = (i: number) => ({
  podInterfaceID: `iface-${i}`,
  infraContainerID: `infra-${i}`,
  orchestratorContext: { PodName: `pod-${i}`, PodNamespace: 'default' },
  desiredIPAddresses: [],
});

describe('sidecar integration: node API, Events and bad input', function () {
  this.timeout(20_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let sidecar: TestSidecar | undefined;
  let node = '';
  let counter = 0;

  before(async () => {
    c = await startCluster();
  });
  beforeEach(() => {
    counter += 1;
    node = `api-node-${counter}`;
    dir = tempDir();
  });
  afterEach(async () => {
    await sidecar?.stop();
    sidecar = undefined;
    dir.remove();
  });
  after(async () => {
    await c?.close();
  });

  const events = async (): Promise<{ reason?: string; message?: string; type?: string }[]> =>
    (await c.core.listNamespacedEvent({ namespace: NS })).items.filter(
      (e) => e.involvedObject?.name === node,
    );

  it('serves probes, /debug/pool, /metrics and the CNI calls on the real store; records PoolScaled', async () => {
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    expect((await fetch(`${sidecar.url}/healthz`)).status).to.equal(200);
    expect((await fetch(`${sidecar.url}/readyz`)).status).to.equal(503);
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    await waitFor('ready', async () => (await fetch(`${sidecar!.url}/readyz`)).status === 200);

    const a = await post(`${sidecar.url}/network/requestipconfigs`, ipReq(1));
    expect(a.status).to.equal(200);
    expect(a.json.response.ReturnCode).to.equal(0);
    const ip = a.json.podIPInfo[0].PodIPConfig.IPAddress as string;
    expect(ip).to.match(/^10\.10\.0\.\d+$/);
    expect(a.json.podIPInfo[0].NetworkContainerPrimaryIPConfig.GatewayIPAddress).to.equal(
      '10.10.0.1',
    );
    const again = await post(`${sidecar.url}/network/requestipconfigs`, ipReq(1));
    expect(again.json.podIPInfo[0].PodIPConfig.IPAddress).to.equal(ip); // idempotent
    const listed = await post(`${sidecar.url}/debug/ipaddresses`, {
      IPConfigStateFilter: ['Assigned'],
    });
    expect(listed.json.IPConfigurationStatus).to.have.length(1);
    expect(listed.json.IPConfigurationStatus[0].IPAddress).to.equal(ip);

    for (let i = 0; i < 8; i++) await createPod(c, `api${counter}-${i}`, node);
    await waitFor('request 20', async () => (await getNnc(c, node)).spec?.requestedIPCount === 20);
    await waitFor('demand 8', () => sidecar!.monitor.snapshot().demand === 8);
    const pool = (await (await fetch(`${sidecar.url}/debug/pool`)).json()) as Record<string, Json>;
    expect(pool).to.deep.include({ demand: 8, target: 20, request: 20, exhausted: false });
    expect(pool.ipCounts).to.deep.include({ Assigned: 1, Available: 9, total: 10 });
    expect(pool.lastReconcile.outcome).to.be.oneOf(['scaled', 'at-target']);
    expect(pool.scaler).to.deep.include({ batch: 10, max: 250 });

    const metrics = await (await fetch(`${sidecar.url}/metrics`)).text();
    expect(metrics).to.match(/cx_ipam_requested_ips\{[^}]*subnet="subnet-a"[^}]*\} 20/);
    expect(metrics).to.match(/cx_ipam_pod_allocated_ips\{[^}]*\} 1/);
    expect(metrics).to.match(/cx_ipam_batch_size\{[^}]*\} 10/);
    expect(metrics).to.match(/pool_monitor_reconciles_total\{outcome="scaled"\} 1/);
    expect(metrics).to.match(/pool_monitor_nnc_writes_total\{result="success"\} 1/);

    const released = await post(`${sidecar.url}/network/releaseipconfigs`, ipReq(1));
    expect(released.json.response.ReturnCode).to.equal(0);
    expect(sidecar.store.counts()).to.deep.include({ Assigned: 0, Available: 10 });
    await waitFor('PoolScaled event', async () =>
      (await events()).find(
        (e) =>
          e.reason === 'PoolScaled' &&
          /^pool scaled from 10 to 20 IPs \(demand [5-8]\)$/.test(e.message ?? ''),
      ),
    );
  });

  it('answers code 32 when no IP is available and 400/23 on a malformed body, changing nothing', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 1 },
      {
        scaler: { ...DEFAULT_SCALER, batchSize: 1, maxIPCount: 1 },
        networkContainers: [container(range(0, 1))],
      },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    expect((await post(`${sidecar.url}/network/requestipconfigs`, ipReq(1))).status).to.equal(200);
    const none = await post(`${sidecar.url}/network/requestipconfigs`, ipReq(2));
    expect(none.json.response.ReturnCode).to.equal(32);
    const bad = await post(`${sidecar.url}/network/requestipconfigs`, '{"podInterfaceID": 7');
    expect(bad.status).to.equal(400);
    expect(bad.json.response.ReturnCode).to.equal(23);
    expect(sidecar.store.counts()).to.deep.include({ Assigned: 1, Available: 0 });
  });

  it('invalid scaler values: warnings naming the field, a ScalerInvalid Event, defaults used', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      {
        scaler: { batchSize: 0, requestThresholdPercent: 50, maxIPCount: -3 },
        networkContainers: [container(range(0, 10))],
      },
    );
    for (let i = 0; i < 3; i++) await createPod(c, `sc${counter}-${i}`, node);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    // batch 1, max 250, buffer 0.5: target = ceil(0.5 + 3) = 4
    await waitFor('request 4', async () => (await getNnc(c, node)).spec?.requestedIPCount === 4);
    const warning = sidecar.logs.find('scaler update').find((r) => r.level === 'warn');
    const fields = (warning?.warnings as { field: string }[]).map((w) => w.field).sort();
    expect(fields).to.deep.equal(['batchSize', 'maxIPCount']);
    await waitFor('ScalerInvalid events', async () => {
      const msgs = (await events())
        .filter((e) => e.reason === 'ScalerInvalid' && e.type === 'Warning')
        .map((e) => e.message ?? '');
      return (
        msgs.some((m) => m.includes('status.scaler.maxIPCount')) &&
        msgs.some((m) => m.includes('status.scaler.batchSize'))
      );
    });
    expect((await fetch(`${sidecar.url}/healthz`)).status).to.equal(200);
  });

  it('an NNC that loses its dynamic containers or status is ignored with a warning; the store is untouched', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    await sleep(150);
    const records = sidecar.store.list();
    const writes = sidecar.monitor.snapshot().writes;
    await setStatus(c, node, {
      scaler: DEFAULT_SCALER,
      networkContainers: [
        { ...container(range(0, 10)), id: 'nc-static', assignmentMode: 'static' },
      ],
    });
    await waitFor('warning', () =>
      sidecar!.logs
        .find('ignoring NodeNetworkConfig')
        .some((r) => String(r.reason).includes('no dynamic network container')),
    );
    await setStatus(c, node, {});
    await waitFor('second warning', () =>
      sidecar!.logs
        .find('ignoring NodeNetworkConfig')
        .some((r) => String(r.reason).includes('status.scaler is missing')),
    );
    await sleep(200);
    expect(sidecar.store.list()).to.deep.equal(records);
    expect(sidecar.monitor.snapshot().writes).to.equal(writes);
    expect((await fetch(`${sidecar.url}/healthz`)).status).to.equal(200);
  });

  it('pods missing fields neither crash the sidecar nor count as demand', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    await createPod(c, `ok${counter}`, node);
    // A bare pod straight through HTTP: no containers, no status.
    const res = await fetch(`${c.server.url}/api/v1/namespaces/default/pods`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${c.server.adminToken}`,
      },
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `bare${counter}` },
        spec: { nodeName: node },
      }),
    });
    expect(res.status).to.be.oneOf([201, 422]);
    const accepted = res.status < 300;
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    // A bare pod is still a pod that needs an IP; a refused one is not there.
    expect(sidecar.monitor.snapshot().demand).to.equal(accepted ? 2 : 1);
    expect((await fetch(`${sidecar.url}/healthz`)).status).to.equal(200);
  });
});

describe('sidecar integration: garbage network containers and dry-run', function () {
  this.timeout(20_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let sidecar: TestSidecar | undefined;

  before(async () => {
    c = await startCluster();
  });
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(async () => {
    await sidecar?.stop();
    sidecar = undefined;
    dir.remove();
  });
  after(async () => {
    await c?.close();
  });

  it('a status listing one address twice is refused by the store: logged, store untouched, still healthy', async () => {
    const node = 'dup-node';
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    const records = sidecar.store.list();
    const bad = container(range(0, 10));
    bad.ipAssignments = [...(bad.ipAssignments ?? []), { name: 'dup-id', ip: '10.10.0.2' }];
    await setStatus(c, node, { scaler: DEFAULT_SCALER, networkContainers: [bad] });
    await waitFor(
      'rejection logged',
      () => sidecar!.logs.find('rejected NodeNetworkConfig').length > 0,
    );
    expect(sidecar.logs.find('rejected NodeNetworkConfig')[0]).to.include({
      field: 'status.networkContainers[0].ipAssignments[10].ip',
    });
    expect(sidecar.store.list()).to.deep.equal(records);
    expect((await fetch(`${sidecar.url}/healthz`)).status).to.equal(200);
  });

  it('--dry-run computes and logs but never marks or writes', async () => {
    const node = 'dry-node';
    await createNnc(
      c,
      node,
      { requestedIPCount: 30 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 30))] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path, { dryRun: true }));
    await waitFor('dry-run outcome', () => sidecar!.logs.find('dry run: not writing').length > 0);
    expect(sidecar.store.counts().PendingRelease).to.equal(0);
    expect((await getNnc(c, node)).spec?.requestedIPCount).to.equal(30);
    const pool = (await (await fetch(`${sidecar.url}/debug/pool`)).json()) as Json;
    expect(pool).to.deep.include({ dryRun: true, target: 10, request: 30 });
  });
});

describe('sidecar integration: in-process lifecycle', function () {
  this.timeout(20_000);
  let c: Cluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await c?.close();
  });

  it('runs two sidecars in one process (injected in-memory stores) and stops on an abort signal', async () => {
    const ctl = new AbortController();
    const started: TestSidecar[] = [];
    for (const node of ['mem-a', 'mem-b']) {
      await createNnc(
        c,
        node,
        { requestedIPCount: 10 },
        { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
      );
      await createPod(c, `${node}-p`, node);
      started.push(
        await startSidecar(c, sidecarOptions(c, node, '/nonexistent'), {
          signal: ctl.signal,
          store: openIpStore({ memory: true }),
        }),
      );
    }
    for (const s of started) await waitFor('ready', () => s.monitor.snapshot().ready);
    expect(started.map((s) => s.monitor.snapshot().demand)).to.deep.equal([1, 1]);
    expect(started[0]!.port).to.not.equal(started[1]!.port);
    ctl.abort();
    await Promise.all(started.map((s) => s.stopped));
    for (const s of started) {
      await fetch(`${s.url}/healthz`).then(
        () => expect.fail('still listening'),
        () => undefined,
      );
      expect(s.logs.find('sidecar stopped')).to.have.length(1);
    }
  });
});
