// Issue 45, items 3 and 7, over HTTP (API server + ARM emulator + real SDK +
// a real fulfiller): other writers of the same NICs (cloud-provider-azure's
// whole-NIC PUT from a stale read, without If-Match; a scale-set reimage)
// remove pod ipConfigurations the NNC lists; the fulfiller finds them within
// a resync plus a NIC list and puts them back with their addresses, or says
// which it lost. And a node left short by SubnetIsFull is served within 10 s
// of addresses coming free elsewhere in the subnet.
import { expect } from 'chai';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import type { AzureBackendTuning, AzureCluster } from '../support/azure-cluster.ts';
import {
  filled,
  leaks,
  NS,
  safetyViolations,
  startAzureCluster,
  startAzureFulfiller,
} from '../support/azure-cluster.ts';
import { waitFor } from '../support/wait.ts';
import type { EmulatedCloudOptions } from '../../harness/azure-emulator/cloud.ts';
import { CLOUD_RESOURCE_GROUP, SCALE_SET } from '../../harness/azure-emulator/cloud.ts';
import type { ArmObject } from '../../harness/azure-emulator/arm-object.ts';

describe('Azure backend beside other writers, and a full subnet recovering (issue 45)', function () {
  this.timeout(60_000);
  let cluster: AzureCluster;
  let running: RunningFulfiller | undefined;
  let logs: CaptureTransport;
  const logged = (msg: string) => logs.records.filter((r) => r.msg === msg);

  const start = async (
    cloud: EmulatedCloudOptions,
    config: Partial<FulfillerConfig> = {},
    backend: AzureBackendTuning = {},
  ): Promise<RunningFulfiller> => {
    cluster = await startAzureCluster(cloud);
    running = await startAzureFulfiller(cluster, (logs = new CaptureTransport()), config, backend);
    return running;
  };
  const holding = (name: string, n: number, timeoutMs = 15_000) =>
    filled(cluster, name, n, timeoutMs);
  const assignments = (o: NodeNetworkConfig) =>
    new Map((dynamicContainers(o)[0]?.ipAssignments ?? []).map((a) => [a.name, a.ip]));
  const onNic = (node: string) =>
    new Map(
      ((cluster.cloud.nicOf(node)?.properties?.ipConfigurations as ArmObject[]) ?? []).map((c) => [
        String(c.name),
        String(c.properties?.privateIPAddress),
      ]),
    );
  const warnings = (reason: string) =>
    (cluster.server.objects('', 'events', NS) as Array<{ reason?: string; type?: string }>).filter(
      (e) => e.reason === reason && e.type === 'Warning',
    );
  const metric = async (outcome: string): Promise<number> => {
    const text = await (await fetch(`${running!.http!.url}/metrics`)).text();
    const m = new RegExp(
      `pool_monitor_arm_ipconfigs_removed_by_others_total\\{outcome="${outcome}"\\} (\\d+)`,
    ).exec(text);
    return Number(m?.[1] ?? NaN);
  };

  const gauge = async (name: string): Promise<number> => {
    const text = await (await fetch(`${running!.http!.url}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  };

  /**
   * node-0 filled with `from`, read by cloud-provider-azure, grown to `to`,
   * then written back from that read: the `to - from` added since are gone
   * from its NIC. Returns its assignments before the write.
   */
  const removedByStaleWrite = async (from: number, to: number) => {
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: from });
    await holding('node-0', from);
    const writers = cluster.cloud.emulator.otherWriters;
    const stale = writers.staleRead(cluster.cloud.nicKey('node-0'))!;
    await cluster.setSpec('node-0', { requestedIPCount: to });
    const before = assignments(await holding('node-0', to));
    expect(writers.staleWrite(stale)).to.equal(to - from);
    return before;
  };

  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await cluster?.close();
  });

  for (const layout of ['pod-nic', 'node-subnet'] as const) {
    it(`${layout}: cloud-provider-azure's stale whole-NIC PUT removes 8 pod ipConfigurations; all restored, same names and addresses`, async () => {
      // A resync every 500 ms and a NIC list when 200 ms old: the bound is resync + list.
      await start({ layout }, { resyncMs: 500 }, { auditMs: 200 });
      const before = await removedByStaleWrite(8, 16);
      const removedAt = Date.now();
      await waitFor(
        'the 8 back on the NIC',
        async () => {
          const nic = onNic('node-0');
          return [...before].every(([name, ip]) => nic.get(name) === ip) ? true : undefined;
        },
        10_000,
      );
      expect(Date.now() - removedAt).to.be.below(5_000);
      const after = assignments(await holding('node-0', 16));
      expect([...after]).to.deep.equal([...before]);
      expect(await metric('restored')).to.equal(8);
      expect(await metric('lost')).to.equal(0);
      expect(safetyViolations(cluster)).to.deep.equal([]);
      expect(leaks(cluster)).to.deep.equal([]);
    });
  }

  it('node-subnet: a round that meets the other write as a 412 restores too (never a status without them)', async () => {
    // No resync, no list: the node's own next round finds the NIC changed (412) and reads it.
    await start({ layout: 'node-subnet' }, { resyncMs: 60_000 }, { auditMs: 60_000 });
    const before = await removedByStaleWrite(8, 16);
    await cluster.setSpec('node-0', { requestedIPCount: 20 });
    const after = assignments(await holding('node-0', 20));
    for (const [name, ip] of before) expect(after.get(name)).to.equal(ip);
    expect(await metric('restored')).to.equal(8);
    expect(safetyViolations(cluster)).to.deep.equal([]);
    expect(leaks(cluster)).to.deep.equal([]);
  });

  it('pod-nic: an address taken by another NIC meanwhile is lost, reported (Event, metric), the rest restored, no address on two NNCs', async () => {
    await start({ layout: 'pod-nic' }, { resyncMs: 60_000 }, { auditMs: 200 });
    const before = await removedByStaleWrite(4, 8);
    // The resync is a minute away: nothing restores before the other NIC takes one.
    const freed = [...before].filter(([name]) => !onNic('node-0').has(name));
    // Another workload's VM in the pod subnet: ARM gives its NIC the lowest
    // free address, one of those just freed.
    const network = cluster.cloud.emulator.network;
    network.addVm({
      resourceGroup: CLOUD_RESOURCE_GROUP,
      name: 'other-workload',
      subnetId: cluster.cloud.podSubnetId,
      asgIds: [cluster.cloud.asgId],
    });
    const other = network.getNic(CLOUD_RESOURCE_GROUP, 'other-workload-nic')!;
    const takenIp = String(
      (other.properties!.ipConfigurations as ArmObject[])[0]!.properties?.privateIPAddress,
    );
    const [taken] = freed.find(([, ip]) => ip === takenIp)!;
    // The next resync (a list older than auditMs: 200 ms) finds it.
    await new Promise((r) => setTimeout(r, 300));
    running!.fulfiller.resync();
    await waitFor('the loss reported', async () => (await metric('lost')) === 1 || undefined);
    expect(await metric('restored')).to.equal(3);
    expect(warnings('IpConfigurationsRemovedByOthers')).to.have.length(1);
    expect(logged('ipConfigurations removed by another writer lost')).to.have.length(1);
    // The status no longer lists the lost one, and the node is topped up to 8.
    const after = assignments(await holding('node-0', 8));
    expect(after.has(taken)).to.equal(false);
    for (const [name, ip] of freed.filter(([n]) => n !== taken))
      expect(after.get(name)).to.equal(ip);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it("pod-nic: addresses ARM hands node-1 that node-0's status still lists (freed by a stale write) are withheld from node-1's status until node-0's drops them: never on two NNCs", async () => {
    // No resync before the test asks: node-0's round comes only when the test says.
    await start({ layout: 'pod-nic' }, { resyncMs: 60_000 }, { auditMs: 200 });
    const before = await removedByStaleWrite(4, 8);
    const freed = new Set(
      [...before].filter(([name]) => !onNic('node-0').has(name)).map(([, ip]) => ip),
    );
    // node-1's NIC gets the lowest free addresses: the 4 node-0's status still lists.
    await cluster.addNode('node-1');
    await cluster.setSpec('node-1', { requestedIPCount: 8 });
    const onNode1 = () => new Set(onNic('node-1').values());
    await waitFor(
      'node-1 holding the freed addresses on its NIC',
      async () => [...freed].every((ip) => onNode1().has(ip)) || undefined,
    );
    const onTwo = () => safetyViolations(cluster).filter((v) => / is on the NNCs of /.test(v));
    // node-1's round ends with its status write (or none): never with node-0's addresses.
    await waitFor(
      'node-1 status written',
      async () =>
        logged('node status written').some((r) => r.node === 'node-1') ||
        logged('addresses withheld: another NodeNetworkConfig holds them').length > 0 ||
        undefined,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(onTwo()).to.deep.equal([]);
    expect(logged('addresses withheld: another NodeNetworkConfig holds them')[0]).to.include({
      node: 'node-1',
    });
    const text = await (await fetch(`${running!.http!.url}/metrics`)).text();
    expect(
      Number(/pool_monitor_fulfiller_ips_withheld_total (\d+)/.exec(text)?.[1]),
    ).to.be.at.least(3);
    // node-0's round (the resync) finds them gone and taken: lost, its status
    // drops them; node-1's then lists them, and both are filled.
    running!.fulfiller.resync();
    await waitFor('the loss reported', async () => (await metric('lost')) >= 4 || undefined);
    for (let i = 0; i < 20 && onTwo().length === 0; i++) {
      running!.fulfiller.resync();
      const one = await cluster.get('node-1');
      const listed = new Set(dynamicContainers(one!)[0]?.ipAssignments?.map((a) => a.ip) ?? []);
      if ([...freed].every((ip) => listed.has(ip) || ip === dynamicContainers(one!)[0]?.primaryIP))
        break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(onTwo()).to.deep.equal([]);
    await holding('node-0', 8);
    await holding('node-1', 8);
    await waitFor('safe', async () => safetyViolations(cluster).length === 0 || undefined);
  });

  it("pod-nic (issue 53): ARM gives node-0's freed addresses to node-1; with resyncs alone, node-0 reports them lost (PrivateIPAddressIsAllocated) and node-1 lists them within one resync of node-0 letting go, no node blocked", async () => {
    const resyncMs = 1_500;
    await start({ layout: 'pod-nic' }, { resyncMs }, { auditMs: 200 });
    const before = await removedByStaleWrite(4, 8);
    const freed = new Map([...before].filter(([name]) => !onNic('node-0').has(name)));
    const freedIps = new Set(freed.values());
    await cluster.addNode('node-1');
    await cluster.setSpec('node-1', { requestedIPCount: 8 });
    const onNode1 = () => new Set(onNic('node-1').values());
    await waitFor(
      'node-1 holding the freed addresses on its NIC',
      async () => [...freedIps].every((ip) => onNode1().has(ip)) || undefined,
    );
    const onNicAt = Date.now();
    // From here on, nothing but the fulfiller's own resyncs. What node-1's
    // status should come to hold: the freed addresses ARM gave its managed
    // ipConfigurations (one may be its pod NIC's own primary address).
    const managed = /^(pool-monitor-nc-primary|[0-9a-f-]{36})$/;
    const wanted = [...onNic('node-1')]
      .filter(([name, ip]) => managed.test(name) && freedIps.has(ip))
      .map(([, ip]) => ip);
    expect(wanted.length).to.be.at.least(3);
    const listedBy = async (node: string) => {
      const nc = dynamicContainers((await cluster.get(node))!)[0];
      return new Set([...(nc?.ipAssignments?.map((a) => a.ip) ?? []), nc?.primaryIP]);
    };
    let letGoAt: number | undefined;
    let listedAt: number | undefined;
    const onTwo: string[] = [];
    await waitFor(
      "node-1's status listing every freed address",
      async () => {
        onTwo.push(...safetyViolations(cluster).filter((v) => / is on the NNCs of /.test(v)));
        const zero = await listedBy('node-0');
        if (letGoAt === undefined && [...freedIps].every((ip) => !zero.has(ip)))
          letGoAt = Date.now();
        const one = await listedBy('node-1');
        if (wanted.every((ip) => one.has(ip))) listedAt = Date.now();
        return listedAt;
      },
      4 * resyncMs + 10_000,
    );
    expect(onTwo).to.deep.equal([]);
    expect(letGoAt, 'node-0 let go first').to.not.equal(undefined);
    const withheldMs = listedAt! - letGoAt!;
    console.log(
      `      withheld ${listedAt! - onNicAt} ms in all, ${withheldMs} ms after node-0 let go (resync ${resyncMs} ms)`,
    );
    expect(withheldMs).to.be.at.most(resyncMs);
    // Lost, and said so: the code ARM answers, parsed for its address.
    expect(await metric('lost')).to.equal(4);
    expect(warnings('IpConfigurationsRemovedByOthers')).to.have.length(1);
    const refused = cluster.cloud.emulator.requests.filter((r) =>
      r.error?.startsWith('PrivateIPAddressIsAllocated'),
    );
    expect(refused.length).to.be.within(1, 4);
    // No node blocked: both filled and Updated, nothing missing any more.
    await holding('node-0', 8);
    await holding('node-1', 8);
    expect(await gauge('pool_monitor_arm_ipconfigs_missing')).to.equal(0);
    await waitFor('safe', async () => safetyViolations(cluster).length === 0 || undefined);
  });

  it('scale-set: a reimage resets the instance; the removed addresses are reported lost and the node refilled', async () => {
    await start({ layout: 'scale-set' }, { resyncMs: 500 }, { auditMs: 200 });
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: 4 });
    await holding('node-0', 4);
    const writers = cluster.cloud.emulator.otherWriters;
    expect(writers.reimage(cluster.cloud.nicKey('node-0'))).to.equal(5); // 4 and the NC primary
    await waitFor('the loss reported', async () => (await metric('lost')) >= 4 || undefined);
    await holding('node-0', 4);
    await waitFor('safe', async () => safetyViolations(cluster).length === 0 || undefined);
    expect(warnings('IpConfigurationsRemovedByOthers').length).to.be.at.least(1);
  });

  it('scale-set, upgradePolicy Manual (issue 53): served with a warning; a model change, then the instance upgraded to it: its addresses reported lost (Event, metric), the node refilled', async () => {
    await start({ layout: 'scale-set' }, { resyncMs: 500 }, { auditMs: 200 });
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: 4 });
    const before = assignments(await holding('node-0', 4));
    const said = logged(
      'scale set served: upgrading an instance to the latest model (manual upgrade, node-image upgrade, reimage) removes its pod addresses; drain the node first',
    );
    expect(said).to.have.length(1);
    expect(said[0]).to.include({ scaleSet: SCALE_SET, upgradeMode: 'Manual' });
    const writers = cluster.cloud.emulator.otherWriters;
    // A new image in the model: nothing happens to the instance yet (Manual)...
    expect(writers.changeModel(CLOUD_RESOURCE_GROUP, SCALE_SET)).to.equal(0);
    // ...until it is upgraded to it (a node-image upgrade does that).
    expect(writers.upgradeInstances(CLOUD_RESOURCE_GROUP, SCALE_SET)).to.equal(5);
    await waitFor('the loss reported', async () => (await metric('lost')) >= 4 || undefined);
    const after = assignments(await holding('node-0', 4));
    for (const name of before.keys()) expect(after.has(name)).to.equal(false);
    const events = warnings('IpConfigurationsRemovedByOthers') as Array<{ message?: string }>;
    expect(events[0]?.message).to.match(
      /^a reimage or an upgrade to the latest model of scale set aks-pool \(instance 0\) removed/,
    );
    await waitFor('safe', async () => safetyViolations(cluster).length === 0 || undefined);
  });

  it('scale-set, upgradePolicy Automatic (issue 53): its node is refused (Warning Event, no write, no address); once the mode is Manual, served at the next resync', async () => {
    await start(
      { layout: 'scale-set', scaleSetUpgradePolicy: 'Automatic' },
      { resyncMs: 500 },
      { auditMs: 200, minRelistMs: 200 },
    );
    await cluster.addNode('node-0');
    await cluster.setSpec('node-0', { requestedIPCount: 4 });
    await waitFor(
      'the refusal',
      async () => warnings('ScaleSetUpgradePolicy').length > 0 || undefined,
    );
    expect(
      logged(
        'scale set refused: its upgrade policy would remove pod addresses under running pods',
      )[0],
    ).to.include({
      scaleSet: SCALE_SET,
      upgradeMode: 'Automatic',
    });
    const text = await (await fetch(`${running!.http!.url}/metrics`)).text();
    expect(text).to.match(/^pool_monitor_arm_scale_sets\{upgrade_mode="Automatic"\} 1$/m);
    expect(cluster.cloud.writesFor('node-0')).to.equal(0);
    expect(
      dynamicContainers((await cluster.get('node-0'))!)[0]?.ipAssignments ?? [],
    ).to.have.length(0);
    cluster.cloud.emulator.network.setUpgradePolicy(CLOUD_RESOURCE_GROUP, SCALE_SET, 'Manual');
    await holding('node-0', 4);
    await waitFor('safe', async () => safetyViolations(cluster).length === 0 || undefined);
  });

  for (const layout of ['pod-nic', 'node-subnet'] as const) {
    it(`${layout}: after SubnetIsFull, a short node is served within 10 s of another workload freeing addresses`, async () => {
      // A /27: 27 usable addresses. Default timings (resync a minute, usage 30 s, full hold 30 s).
      await start({ layout, podPrefix: '10.240.0.0/27' });
      const network = cluster.cloud.emulator.network;
      await cluster.addNode('node-0');
      await waitFor('node-0 set up', async () => (await cluster.get('node-0'))?.status?.status);
      network.addVm({
        resourceGroup: CLOUD_RESOURCE_GROUP,
        name: 'other-workload',
        subnetId: cluster.cloud.podSubnetId,
        asgIds: [cluster.cloud.asgId],
      });
      const nic = network.getNic(CLOUD_RESOURCE_GROUP, 'other-workload-nic')!;
      const primary = (nic.properties!.ipConfigurations as ArmObject[])[0]!;
      const app = (i: number) => ({
        name: `app-${i}`,
        properties: {
          privateIPAllocationMethod: 'Dynamic',
          subnet: { id: cluster.cloud.podSubnetId },
          applicationSecurityGroups: [{ id: cluster.cloud.asgId }],
        },
      });
      const occupy = (n: number) =>
        network.putNic(
          CLOUD_RESOURCE_GROUP,
          'other-workload-nic',
          {
            properties: {
              ...nic.properties,
              ipConfigurations: [primary, ...Array.from({ length: n }, (_, i) => app(i))],
            },
          },
          undefined,
        );
      // Leave 4 free.
      occupy(network.subnet(cluster.cloud.podSubnetId)!.free - 4);
      expect(network.subnet(cluster.cloud.podSubnetId)!.free).to.equal(4);
      await cluster.setSpec('node-0', { requestedIPCount: 10 });
      await waitFor(
        'node-0 short',
        async () => {
          const o = await cluster.get('node-0');
          return o?.status?.status === 'SubnetFull' ? o : undefined;
        },
        15_000,
      );
      expect(network.subnet(cluster.cloud.podSubnetId)!.free).to.equal(0);
      // Another workload frees 8 addresses.
      const cur = network.getNic(CLOUD_RESOURCE_GROUP, 'other-workload-nic')!;
      const configs = cur.properties!.ipConfigurations as ArmObject[];
      network.putNic(
        CLOUD_RESOURCE_GROUP,
        'other-workload-nic',
        {
          properties: { ...cur.properties, ipConfigurations: configs.slice(0, configs.length - 8) },
        },
        undefined,
      );
      const freedAt = Date.now();
      await holding('node-0', 10, 12_000);
      expect(Date.now() - freedAt).to.be.below(10_000);
      expect(safetyViolations(cluster)).to.deep.equal([]);
    });
  }
});
