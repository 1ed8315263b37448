// The fulfiller against the local API server over real HTTP: fills an NNC,
// releases ipsNotInUse, keeps allocations across a restart, flips the CSS,
// counts a repeated Warning Event, survives injected write failures and
// dropped watches; and the command
// exits 0 on SIGTERM. The fulfiller runs as its service account with
// exactly what manifests/ grants it (test/support/rbac.ts); the test's own
// writes are the admin's.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { CSS, NS } from '../support/test-cluster.ts';
import { waitFor } from '../support/wait.ts';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { NodeSetupError, type BackendFactory } from '../../src/fulfiller/backend.ts';
import { CidrBackend } from '../../src/fulfiller/cidr-backend.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { ClusterSubnetState, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { dynamicContainers, NNC_PLURAL } from '../../src/nnc/types.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('fulfiller over the local API server', function () {
  this.timeout(30_000);
  let cluster: StrictCluster;
  let server: ApiServer;
  const running: RunningFulfiller[] = [];

  const start = async (
    overrides: Partial<FulfillerConfig> = {},
    backend?: BackendFactory,
  ): Promise<RunningFulfiller> => {
    const config = makeFulfillerConfig({
      subnet: '10.240.0.0/24',
      subnetName: 'pods',
      minIntervalMs: 0,
      backoff: { initialMs: 20, maxMs: 200 },
      ...overrides,
    });
    const own = await cluster.fulfillerKubeConfig();
    const r = await startFulfiller({
      kc: own,
      config,
      logger: silentLogger(),
      ...(backend ? { backend } : {}),
    });
    running.push(r);
    return r;
  };
  const get = async (name: string) => (await cluster.getNnc(name))!;
  const ipsOf = (n: NodeNetworkConfig) => dynamicContainers(n)[0]?.ipAssignments ?? [];
  /** A Node and its NNC asking for `requestedIPCount` (the fulfiller may create the NNC first). */
  const create = async (name: string, requestedIPCount: number) => {
    await cluster.addNode(name).catch(() => {});
    await cluster.setSpec(name, { requestedIPCount }, { create: true });
  };
  const setSpec = (name: string, spec: Record<string, unknown>) => cluster.setSpec(name, spec);
  const withCount = (name: string, n: number) =>
    waitFor(`${name} with ${n} IPs`, async () => {
      const o = await get(name);
      return ipsOf(o).length === n && o.status?.status === 'Updated' ? o : undefined;
    });

  beforeEach(async () => {
    cluster = await strictCluster();
    ({ server } = cluster);
  });

  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    await cluster.close();
  });

  it('fills an NNC, releases exactly ipsNotInUse, and keeps everything across a restart', async () => {
    await create('node-1', 16);
    const first = await start();
    const filled = await withCount('node-1', 16);
    const nc = dynamicContainers(filled)[0]!;
    expect(nc).to.include({
      assignmentMode: 'dynamic',
      type: 'vnet',
      subnetName: 'pods',
      subnetAddressSpace: '10.240.0.0/24',
      defaultGateway: '10.240.0.1',
    });
    expect(filled.status?.scaler?.batchSize).to.equal(16);
    expect(filled.status?.assignedIPCount).to.equal(16);

    const ids = nc.ipAssignments!.map((a) => a.name);
    await setSpec('node-1', { requestedIPCount: 12, ipsNotInUse: ids.slice(0, 4) });
    const shrunk = await withCount('node-1', 12);
    expect(ipsOf(shrunk).map((a) => a.name)).to.deep.equal(ids.slice(4));

    await first.stop();
    await create('node-2', 40);
    const second = await start();
    const two = await withCount('node-2', 40);
    const again = await get('node-1');
    expect(ipsOf(again).map((a) => a.name)).to.deep.equal(ids.slice(4));
    const all = [...ipsOf(again), ...ipsOf(two)].map((a) => a.ip);
    all.push(dynamicContainers(again)[0]!.primaryIP!, dynamicContainers(two)[0]!.primaryIP!);
    expect(new Set(all).size).to.equal(all.length);
    expect(second.fulfiller.stats().subnets[0]!.free).to.equal(251 - all.length);
  });

  it('creates the ClusterSubnetState and flips exhausted both ways', async () => {
    // /26: 59 usable; exhausted below 10 free, recovered at 20.
    await start({
      subnet: '10.9.0.0/26',
      exhaustionThreshold: 10,
      recoveryMargin: 10,
      exhaustionHoldMs: 0,
    });
    const css = () =>
      cluster.objects.getNamespacedCustomObject({
        ...CSS,
        name: 'pods',
      }) as Promise<ClusterSubnetState>;
    await waitFor('css published', async () =>
      (await css()).status?.exhausted === false ? true : undefined,
    );
    await create('node-1', 52);
    await withCount('node-1', 52);
    await waitFor('exhausted', async () =>
      (await css()).status?.exhausted === true ? true : undefined,
    );
    const ids = ipsOf(await get('node-1')).map((a) => a.name);
    await setSpec('node-1', { requestedIPCount: 36, ipsNotInUse: ids.slice(0, 16) });
    await withCount('node-1', 36);
    const recovered = await waitFor('recovered', async () => {
      const c = await css();
      return c.status?.exhausted === false ? c : undefined;
    });
    expect(recovered.status?.timestamp).to.be.a('string');
  });

  it('a node the backend cannot set up: one Warning Event, updated on every retry (as its service account)', async () => {
    await start({}, ({ addresses }) => {
      const cidr = new CidrBackend({ cidr: '10.240.0.0/24', subnetName: 'pods' }, addresses);
      return {
        kind: cidr.kind,
        subnets: () => cidr.subnets(),
        families: () => cidr.families(),
        apply: (node) =>
          Promise.reject(new NodeSetupError('NoProviderID', `node ${node.name} has no providerID`)),
        releaseAll: (node, container) => cidr.releaseAll(node, container),
      };
    });
    await create('node-1', 8);
    // The recorder creates the Event, then updates its count (PUT): both
    // must be granted by manifests/ (cluster.close() fails on a refusal).
    const event = await waitFor('the Warning Event counted twice', async () => {
      const list = await cluster.core.listNamespacedEvent({ namespace: NS });
      return list.items.find(
        (e) =>
          e.reason === 'NoProviderID' && e.involvedObject.name === 'node-1' && (e.count ?? 0) >= 2,
      );
    });
    expect(event).to.deep.include({ type: 'Warning', message: 'node node-1 has no providerID' });
    expect(event.source?.component).to.equal('ipam-fulfiller');
  });

  it('rides over injected 409/500/429 on status writes and dropped watches', async () => {
    const r = await start();
    await r.whenSynced();
    server.faults.inject({
      verb: 'update',
      resource: NNC_PLURAL,
      subresource: 'status',
      status: 500,
    });
    server.faults.inject({
      verb: 'update',
      resource: NNC_PLURAL,
      subresource: 'status',
      status: 429,
      retryAfterSeconds: 1,
    });
    await create('node-1', 8);
    await withCount('node-1', 8);
    expect(r.fulfiller.stats().failures).to.be.at.least(1);
    server.faults.dropWatches(NNC_PLURAL);
    server.faults.compactHistory();
    await setSpec('node-1', { requestedIPCount: 24 });
    await withCount('node-1', 24);
    expect(r.fulfiller.stats().subnets[0]!.free).to.equal(251 - 25);
  });

  it('bin/pool-monitor fulfiller fills NNCs and exits 0 on SIGTERM', async () => {
    await create('node-1', 16);
    const child = spawn(
      `${ROOT}bin/pool-monitor`,
      [
        'fulfiller',
        '--kubeconfig',
        await cluster.kubeconfigFile('fulfiller'),
        '--subnet',
        '10.250.0.0/20',
        '--workers',
        '2',
        '--listen',
        '127.0.0.1:0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => resolve(code)),
    );
    try {
      await withCount('node-1', 16);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, out).to.equal(0);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l.msg === 'node status written' && l.node === 'node-1')).to.equal(
      true,
    );
    expect(lines.at(-1)?.msg).to.equal('fulfiller stopped');
  });
});
