// The fulfiller on its Azure backend, over HTTP: the local API server, the ARM
// emulator and the real @azure/arm-network SDK. NNCs fill with ids that ARE
// the NIC's ipConfiguration names; the ARM series are on the fulfiller's
// /metrics; a node without providerID gets a Warning Event and is served once
// it has one; a deleted Node's addresses leave its NIC; SubnetIsFull and the
// subnet's usage drive the ClusterSubnetState.
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { cssNameOf } from '../../src/azure/container.ts';
import { dynamicContainers, NNC_KIND } from '../../src/nnc/types.ts';
import type { AzureBackendTuning, AzureCluster } from '../support/azure-cluster.ts';
import {
  filled as filledIn,
  leaks,
  managedConfigs,
  NS,
  safetyViolations,
  startAzureCluster,
  startAzureFulfiller,
} from '../support/azure-cluster.ts';
import { waitFor } from '../support/wait.ts';
import type { EmulatedCloudOptions } from '../../harness/azure-emulator/cloud.ts';
import { CLOUD_RESOURCE_GROUP } from '../../harness/azure-emulator/cloud.ts';

describe('fulfiller --backend azure over HTTP (API server + ARM emulator + real SDK)', function () {
  this.timeout(30_000);
  let cluster: AzureCluster;
  let running: RunningFulfiller | undefined;
  let logs: CaptureTransport;

  const start = async (
    cloud: EmulatedCloudOptions = {},
    config: Partial<FulfillerConfig> = {},
    backend: AzureBackendTuning = {},
  ): Promise<RunningFulfiller> => {
    cluster = await startAzureCluster(cloud);
    return run(config, backend);
  };
  /** A fresh fulfiller (nothing cached) on the cluster. */
  const run = async (
    config: Partial<FulfillerConfig> = {},
    backend: AzureBackendTuning = {},
  ): Promise<RunningFulfiller> => {
    running = await startAzureFulfiller(cluster, (logs = new CaptureTransport()), config, backend);
    return running;
  };
  const filled = (name: string, n: number) => filledIn(cluster, name, n);
  const css = (name = 'aks-pods') => cluster.css(name);
  const warnings = (reason: string) =>
    (cluster.server.objects('', 'events', NS) as Array<{ reason?: string; type?: string }>).filter(
      (e) => e.reason === reason && e.type === 'Warning',
    );

  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await cluster?.close();
  });

  it('fills NNCs in one PUT each: NNC ids are the NIC ipConfigurations, ARM series on /metrics', async () => {
    const r = await start({}, { forecast: { minSpanMs: 50 } }); // a forecast after 50 ms of history
    await cluster.addNode('node-0');
    await cluster.addNode('node-1');
    await cluster.setSpec('node-0', { requestedIPCount: 16 });
    await cluster.setSpec('node-1', { requestedIPCount: 30 });
    const n0 = await filled('node-0', 16);
    await filled('node-1', 30);
    expect(safetyViolations(cluster)).to.deep.equal([]);
    expect(leaks(cluster)).to.deep.equal([]);

    const nc = dynamicContainers(n0)[0]!;
    // node-0 has a pod NIC: the NC's nodeIP is the VM's own address, on its primary NIC.
    const nic = cluster.cloud.emulator.network.getNic(CLOUD_RESOURCE_GROUP, 'node-0-nic')!;
    const primary = (
      nic.properties!.ipConfigurations as Array<{ properties: Record<string, unknown> }>
    )
      .map((c) => c.properties)
      .find((p) => p.primary === true)!;
    expect(nc).to.include({
      subnetName: 'aks-pods',
      subnetAddressSpace: '10.240.0.0/16',
      defaultGateway: '10.240.0.1',
      nodeIP: primary.privateIPAddress,
    });
    // The NNC was created empty (the NC primary: one PUT), then the spec (one more).
    const report = cluster.cloud.report();
    expect(report.putsPerNode.max).to.be.at.most(2);

    const metrics = await (await fetch(`${r.http!.url}/metrics`)).text();
    expect(metrics).to.match(
      /pool_monitor_arm_requests_total\{operation="NetworkInterfaces.CreateOrUpdate",code="200"\} [1-9]/,
    );
    expect(metrics).to.match(
      /pool_monitor_arm_request_duration_seconds_count\{operation="[^"]+"\} [1-9]/,
    );
    expect(metrics).to.match(/pool_monitor_arm_throttled_waits_total\{cause="token-bucket"\} \d/);
    // 46 secondaries and 2 NC primaries taken from the subnet.
    expect(metrics).to.match(/pool_monitor_arm_ips_allocated_total 48\n/);
    expect(metrics).to.match(/pool_monitor_fulfiller_subnet_free_ips\{subnet="aks-pods"\} \d+/);
    // The exhaustion forecast works on this backend's free count too: 48 taken in seconds.
    let forecastLine = '';
    await waitFor(
      'a finite exhaustion forecast',
      async () => {
        const text = await (await fetch(`${r.http!.url}/metrics`)).text();
        forecastLine =
          /pool_monitor_fulfiller_subnet_exhaustion_forecast_seconds\{subnet="aks-pods"\} \S+/.exec(
            text,
          )?.[0] ?? 'no forecast';
        const seconds = Number(forecastLine.split(' ')[1]);
        return seconds > 0 && seconds < Infinity;
      },
      5000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; /metrics said: ${forecastLine}`);
    });
    // Release exactly ipsNotInUse, in one more PUT for that node.
    const ids = nc.ipAssignments!.map((a) => a.name);
    await cluster.setSpec('node-0', { requestedIPCount: 10, ipsNotInUse: ids.slice(0, 6) });
    const shrunk = await filled('node-0', 10);
    expect(dynamicContainers(shrunk)[0]!.ipAssignments!.map((a) => a.name)).to.deep.equal(
      ids.slice(6),
    );
    expect(managedConfigs(cluster.cloud, 'node-0').map((c) => c.name)).to.not.include.members(
      ids.slice(0, 6),
    );
    const after = await (await fetch(`${r.http!.url}/metrics`)).text();
    expect(after).to.match(/pool_monitor_arm_ips_released_total 6\n/);
  });

  it('a Node without providerID gets a Warning Event, and is served once it has one', async () => {
    await start();
    await cluster.addNode('bare', { providerID: false });
    await cluster.setSpec('bare', { requestedIPCount: 8 });
    await waitFor('a NoProviderID warning', () => warnings('NoProviderID').length > 0, 10_000);
    expect(dynamicContainers((await cluster.get('bare'))!)).to.have.length(0);

    const providerID = cluster.cloud.addNode('bare');
    await cluster.kc.makeApiClient(CoreV1Api).patchNode({
      name: 'bare',
      body: [{ op: 'add', path: '/spec', value: { providerID } }],
    });
    await filled('bare', 8);
    expect(leaks(cluster)).to.deep.equal([]);
  });

  it("a deleted Node's addresses leave its NIC (found by its NC primary address)", async () => {
    await start();
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: 12 });
    await filled('node-0', 12);
    expect(managedConfigs(cluster.cloud, 'node-0')).to.have.length(13);
    // A fresh fulfiller knows nothing of node-0's NIC but what the NNC says.
    await running!.stop();
    // Long enough that a loaded machine still sees the quarantine's start.
    await run({ quarantineMs: 4000 });
    await running!.whenSynced();
    await cluster.kc.makeApiClient(CoreV1Api).deleteNode({ name: 'node-0' });
    // Quarantined first (its pods may still run: docs/design/fulfiller.md#high-availability):
    // the NNC stays, terminating, as its record (docs/decisions/0030) ...
    let whileTerminating = -1;
    await waitFor('the NNC terminating', async () => {
      if ((await cluster.get('node-0'))?.metadata.deletionTimestamp === undefined) return false;
      whileTerminating = managedConfigs(cluster.cloud, 'node-0').length;
      return true;
    });
    expect(whileTerminating).to.equal(13);
    // ... then the addresses are released and the NNC goes.
    await waitFor(
      'the addresses released',
      () => managedConfigs(cluster.cloud, 'node-0').length === 0,
      20_000,
    );
    await waitFor('the NNC deleted', async () => (await cluster.get('node-0')) === undefined);
    // The NIC's own primary ipConfiguration stays.
    expect(cluster.cloud.nicOf('node-0')!.properties!.ipConfigurations).to.have.length(1);
  });

  it('a PUT whose answer was lost leaves nothing unrecorded, even when no round is needed any more', async () => {
    await start();
    await cluster.addNode('node-0');
    await cluster.addNode('node-1');
    await cluster.setSpec('node-0', { requestedIPCount: 8 });
    await cluster.setSpec('node-1', { requestedIPCount: 8 });
    await filled('node-0', 8);
    await filled('node-1', 8);
    // node-0 asks for 16: its PUTs land, every answer is lost (more than the retries).
    const lost = () =>
      cluster.cloud.emulator.inject({
        operation: 'NetworkInterfaces.CreateOrUpdate',
        nic: 'node-0-nic',
        status: 500,
        landed: true,
        times: 5,
      });
    lost();
    await cluster.setSpec('node-0', { requestedIPCount: 16 });
    await waitFor(
      'the orphans on the NIC',
      () => managedConfigs(cluster.cloud, 'node-0').length > 9,
    );
    // ...and goes back to 8 before a round succeeds: the spec alone needs nothing.
    await cluster.setSpec('node-0', { requestedIPCount: 8 });
    await waitFor('nothing unrecorded on node-0', () => leaks(cluster).length === 0, 10_000);

    // The same for a fresh fulfiller that finds a predecessor's orphans (node-1).
    await running!.stop();
    await run();
    cluster.cloud.emulator.inject({
      operation: 'NetworkInterfaces.CreateOrUpdate',
      nic: 'node-1-nic',
      status: 500,
      landed: true,
      times: 5,
    });
    await cluster.setSpec('node-1', { requestedIPCount: 16 });
    await waitFor(
      'the orphans on the NIC',
      () => managedConfigs(cluster.cloud, 'node-1').length > 9,
    );
    await running!.stop();
    await cluster.setSpec('node-1', { requestedIPCount: 8 });
    await run();
    await waitFor('nothing unrecorded on node-1', () => leaks(cluster).length === 0, 10_000);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  for (const subnetFullMode of ['sync', 'lro'] as const) {
    it(`SubnetIsFull (${subnetFullMode}) publishes the CSS exhausted, fills what fits, recovers on release`, async () => {
      // /27: 27 usable (Azure keeps 5). Exhausted below 4 free, recovered at 6.
      const r = await start(
        { podPrefix: '10.240.0.0/27', subnetFullMode },
        { exhaustionThreshold: 4, recoveryMargin: 2, exhaustionHoldMs: 0 },
        { fullHoldMs: 300 },
      );
      await waitFor('the CSS published', async () => (await css())?.status?.exhausted === false);
      await cluster.addNode('node-0');
      await cluster.addNode('node-1');
      await cluster.setSpec('node-0', { requestedIPCount: 16 });
      await filled('node-0', 16);
      await cluster.setSpec('node-1', { requestedIPCount: 16 });
      // The NICs' own addresses (node-0's pod NIC, node-1's NIC) take 2:
      // 27 − 2 − 17 = 8 left: node-1 gets its NC primary and 7.
      const short = await waitFor('node-1 short', async () => {
        const o = await cluster.get('node-1');
        const n = o && dynamicContainers(o)[0]?.ipAssignments?.length;
        return n === 7 && o?.status?.status === 'SubnetFull' ? o : undefined;
      });
      expect(short.status?.status).to.equal('SubnetFull');
      await waitFor('exhausted', async () => (await css())?.status?.exhausted === true);
      expect(warnings('SubnetFull').length).to.be.at.least(1);
      expect(safetyViolations(cluster)).to.deep.equal([]);
      // No hot loop: a handful of PUTs while the subnet is full.
      const putsBefore = cluster.cloud.report().byOperationAndStatus;
      await new Promise((res) => setTimeout(res, 1000));
      const putsAfter = cluster.cloud.report().byOperationAndStatus;
      const puts = (o: Record<string, number>) =>
        Object.entries(o)
          .filter(([k]) => k.startsWith('NetworkInterfaces.CreateOrUpdate'))
          .reduce((n, [, v]) => n + v, 0);
      expect(puts(putsAfter) - puts(putsBefore)).to.be.at.most(2);

      // node-0 gives back 15: node-1 gets its remaining 9, 6 stay free, the CSS recovers.
      const ids = dynamicContainers((await cluster.get('node-0'))!)[0]!.ipAssignments!.map(
        (a) => a.name,
      );
      await cluster.setSpec('node-0', { requestedIPCount: 1, ipsNotInUse: ids.slice(0, 15) });
      await filled('node-0', 1);
      await filled('node-1', 16);
      await waitFor('recovered', async () => (await css())?.status?.exhausted === false, 10_000);
      expect(leaks(cluster)).to.deep.equal([]);
      expect(r.fulfiller.stats().subnets[0]!.free).to.equal(27 - 2 - 2 - 17);
    });
  }

  it('an ARM subnet name that is no Kubernetes name (AKS_Pods): the CSS and every NC subnetName carry its mapped name, and the log names both', async () => {
    await start({ podSubnetName: 'AKS_Pods', layout: 'node-subnet' });
    const name = cssNameOf('AKS_Pods');
    expect(name).to.match(/^aks-pods-[0-9a-f]{8}$/);
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: 4 });
    const nc = dynamicContainers(await filled('node-0', 4))[0]!;
    expect(nc.subnetName).to.equal(name);
    const published = await waitFor('the CSS', async () => {
      const got = await css(name);
      return got?.status?.exhausted === false ? got : undefined;
    });
    // Its status names the ARM subnet, so the mapping reads back from the cluster.
    expect(published.status?.armSubnet?.name).to.equal('AKS_Pods');
    expect(published.status?.armSubnet?.id).to.match(/\/subnets\/AKS_Pods$/);
    // The log line's fields name both: the ARM subnet and its ClusterSubnetState.
    expect(
      logs.records
        .filter((r) => r.level === 'info')
        .map((r) => ({ subnet: r.subnet, clusterSubnetState: r.clusterSubnetState })),
    ).to.deep.include({ subnet: 'AKS_Pods', clusterSubnetState: name });
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it("node subnet layout without --pod-subnet-id: each NNC names its NIC's subnet, one ClusterSubnetState per subnet in use", async () => {
    await start({ layout: 'node-subnets' }, { resyncMs: 200 }, { usageRefreshMs: 100 });
    // node-0 in aks-nodes, node-1 in aks-pods, node-2 a scale-set instance in aks-nodes.
    const nodes = ['node-0', 'node-1', 'node-2'];
    for (const n of nodes) await cluster.addNode(n);
    for (const n of nodes) await cluster.setSpec(n, { requestedIPCount: 6 });
    const ncs = await Promise.all(
      nodes.map(async (n) => dynamicContainers(await filled(n, 6))[0]!),
    );
    expect(
      ncs.map((nc) => [nc.subnetName, nc.subnetAddressSpace, nc.defaultGateway]),
    ).to.deep.equal([
      ['aks-nodes', '10.224.0.0/16', '10.224.0.1'],
      ['aks-pods', '10.240.0.0/16', '10.240.0.1'],
      ['aks-nodes', '10.224.0.0/16', '10.224.0.1'],
    ]);
    // Each subnet's CSS, exhausted or not by its own usage.
    await waitFor('both CSS', async () =>
      (await css('aks-nodes'))?.status?.exhausted === false &&
      (await css('aks-pods'))?.status?.exhausted === false
        ? true
        : undefined,
    );
    // Each subnet's own usage (65,531 usable each; aks-nodes: 2 NICs + 2 × 7,
    // aks-pods: 1 NIC + 7), once a usage read lands after the rounds (one in
    // flight during a round errs towards less free).
    const free = () =>
      Object.fromEntries(running!.fulfiller.stats().subnets.map((x) => [x.name, x.free]));
    await waitFor('each subnet its own usage', async () => {
      const f = free();
      return f['aks-nodes'] === 65_531 - 16 && f['aks-pods'] === 65_531 - 8 ? true : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(free())}`);
    });
    expect(safetyViolations(cluster)).to.deep.equal([]);
    expect(leaks(cluster)).to.deep.equal([]);
  });

  it('a node that gets no NC primary (SubnetIsFull, usage not yet stale) flips the CSS at once', async () => {
    // /28: 11 usable. The usage is read at start and not again for a minute.
    await start(
      { podPrefix: '10.240.0.0/28' },
      { exhaustionThreshold: 1, recoveryMargin: 1, exhaustionHoldMs: 0 },
      { usageRefreshMs: 60_000 },
    );
    await waitFor('the CSS published', async () => (await css())?.status?.exhausted === false);
    // Others take 10; node-0's pod NIC takes the last one for itself.
    for (let i = 0; i < 10; i++) {
      cluster.cloud.emulator.network.addVm({
        resourceGroup: 'other',
        name: `other-${i}`,
        subnetId: cluster.cloud.podSubnetId,
      });
    }
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: 4 });
    await waitFor('node-0 waits for an address', async () =>
      (await cluster.get('node-0'))?.status?.status === 'SubnetFull' ? true : undefined,
    );
    await waitFor('exhausted', async () => (await css())?.status?.exhausted === true, 3000);
  });

  it('a node whose VM has no NIC in the pod subnet: one Warning Event naming NIC and subnets, no NIC write, the others filled', async () => {
    await start({}, { resyncMs: 200 });
    await cluster.addNode('node-0');
    await cluster.addNode('odd', { layout: 'unfit' });
    await cluster.setSpec('node-0', { requestedIPCount: 8 });
    await cluster.setSpec('odd', { requestedIPCount: 8 });
    await filled('node-0', 8);
    const events = await waitFor('the Warning Event on odd', async () => {
      const w = warnings('NicNotInPodSubnet');
      return w.length > 0 ? w : undefined;
    });
    const event = events[0] as {
      message?: string;
      involvedObject?: { name?: string; kind?: string };
    };
    expect(event.involvedObject).to.include({ name: 'odd', kind: NNC_KIND });
    expect(event.message).to.include('NIC odd-nic is in subnet aks-nodes');
    expect(event.message).to.include('pod subnet aks-pods');
    // Not retried (it waits for a change): no ARM write, no list either, and
    // one Event rather than many.
    await new Promise((r) => setTimeout(r, 1500));
    const requests = cluster.cloud.emulator.requests;
    expect(requests.filter((q) => q.method !== 'GET' && q.nic === 'odd-nic')).to.deep.equal([]);
    expect(requests.filter((q) => q.operation === 'NetworkInterfaces.List').length).to.be.at.most(
      2,
    );
    expect(warnings('NicNotInPodSubnet')).to.have.length(1);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it('a node whose VM has no NIC in the pod subnet is not retried: one verdict, one Event, looked at again on a Node change or the resync', async () => {
    const r = await start({}, { resyncMs: 60_000 });
    await cluster.addNode('odd', { layout: 'unfit' });
    await cluster.setSpec('odd', { requestedIPCount: 8 });
    await waitFor('the Warning Event on odd', async () =>
      warnings('NicNotInPodSubnet').length > 0 ? true : undefined,
    );
    const attempts = () => r.fulfiller.stats().failures;
    const armRequests = () => cluster.cloud.emulator.requests.length;
    // One look per change so far (the Node, its NNC created, the spec set,
    // whose watch events may come late): let them land.
    await r.fulfiller.whenIdle();
    await new Promise((res) => setTimeout(res, 300));
    await r.fulfiller.whenIdle();
    const [a0, q0, e0] = [attempts(), armRequests(), warnings('NicNotInPodSubnet').length];
    // Its log line says it waits for a change (no retry delay, and no
    // `"retryInMs": null` in the JSON log, which is what Infinity becomes).
    const failed = logs.find('node action failed').filter((r) => r.node === 'odd');
    expect(failed).to.have.length(a0);
    for (const r of failed) {
      expect(r).to.include({ waitsForChange: true }).and.not.have.property('retryInMs');
    }
    expect(a0).to.be.within(1, 3);
    expect(e0).to.be.within(1, a0);
    // The backoff (20 ms .. 200 ms here) would have retried it several times.
    await new Promise((res) => setTimeout(res, 1000));
    expect(attempts()).to.equal(a0);
    expect(armRequests()).to.equal(q0);
    expect(r.fulfiller.stats().pending).to.equal(0);
    expect(warnings('NicNotInPodSubnet')).to.have.length(e0);
    // A Node change looks at it again (from the NIC list it has: no ARM call).
    const core = cluster.kc.makeApiClient(CoreV1Api);
    const node = await core.readNode({ name: 'odd' });
    node.metadata!.labels = { ...node.metadata!.labels, changed: 'yes' };
    await core.replaceNode({ name: 'odd', body: node });
    await waitFor('a second look', async () => (attempts() === a0 + 1 ? true : undefined));
    await r.fulfiller.whenIdle();
    expect(armRequests()).to.equal(q0);
    // So does the resync.
    r.fulfiller.resync();
    await waitFor('a third look', async () => (attempts() === a0 + 2 ? true : undefined));
    await new Promise((res) => setTimeout(res, 500));
    expect(attempts()).to.equal(a0 + 2);
    expect(cluster.cloud.emulator.requests.filter((q) => q.method !== 'GET')).to.deep.equal([]);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it("a NIC attached to an unfit node's VM is found at the next resync (ARM tells nobody: one NIC list, no Node change)", async () => {
    // Relisting allowed at every resync here (the product's: once a minute).
    const r = await start({}, { resyncMs: 60_000 }, { minRelistMs: 0 });
    await cluster.addNode('odd', { layout: 'unfit' });
    await cluster.setSpec('odd', { requestedIPCount: 8 });
    await waitFor('the Warning Event on odd', async () =>
      warnings('NicNotInPodSubnet').length > 0 ? true : undefined,
    );
    // Let the looks its own changes cause (the NNC created, the spec set,
    // whose watch events may come late) land before the NIC comes.
    await r.fulfiller.whenIdle();
    await new Promise((res) => setTimeout(res, 300));
    await r.fulfiller.whenIdle();
    const lists = () =>
      cluster.cloud.emulator.requests.filter((q) => q.operation === 'NetworkInterfaces.List')
        .length;
    // A pod NIC attached out of band: ARM sends no event, and nothing looks yet.
    cluster.cloud.attachPodNic('odd');
    const l0 = lists();
    await new Promise((res) => setTimeout(res, 500));
    expect(lists()).to.equal(l0);
    expect(dynamicContainers((await cluster.get('odd'))!)).to.deep.equal([]);
    // The resync looks at the unfit node again: one list finds the new NIC.
    r.fulfiller.resync();
    await filled('odd', 8);
    expect(lists()).to.equal(l0 + 1);
    expect(
      cluster.cloud.emulator.requests.filter((q) => q.nic === 'odd-nic' && q.method !== 'GET'),
    ).to.deep.equal([]);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it('the CSS follows the subnet usage others cause (virtualNetworks/usages)', async () => {
    await start(
      { podPrefix: '10.240.0.0/27' },
      { exhaustionThreshold: 10, recoveryMargin: 2, exhaustionHoldMs: 0, resyncMs: 200 },
      { usageRefreshMs: 200 },
    );
    await waitFor('the CSS published', async () => (await css())?.status?.exhausted === false);
    // Another tool takes 20 of the 27 usable addresses (VMs in the pod subnet).
    for (let i = 0; i < 20; i++) {
      cluster.cloud.emulator.network.addVm({
        resourceGroup: 'other',
        name: `other-${i}`,
        subnetId: cluster.cloud.podSubnetId,
      });
    }
    await waitFor(
      'exhausted from the usage',
      async () => (await css())?.status?.exhausted === true,
    );
  });
});
