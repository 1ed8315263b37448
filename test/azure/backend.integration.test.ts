// The Azure backend through the real @azure/arm-network client, over HTTP,
// against the ARM emulator: the Azure backend's rules of docs/design/fulfiller.md,
// backend side.
import { mkdtemp, mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { TokenFileSource } from '../../src/azure/arm/credentials.ts';
import { TokenBucket } from '../../src/azure/arm/token-bucket.ts';
import { AzureBackend } from '../../src/azure/backend.ts';
import { ArmMetrics } from '../../src/azure/metrics.ts';
import { sdkNicApi } from '../../src/azure/nic-api.ts';
import type { NodeRef } from '../../src/fulfiller/backend.ts';
import { SubnetFullError } from '../../src/fulfiller/backend.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { CLOUD_TOKEN, EmulatedCloud } from '../../harness/azure-emulator/cloud.ts';
import { createAzureBackend } from '../../src/azure/setup.ts';
import { addNodes, clientFor, RG, startRig, staticToken } from './helpers.ts';
import type { Rig } from './helpers.ts';

type ClientOptions = Parameters<typeof clientFor>[1];

function backendFor(
  rig: Rig,
  options: ClientOptions = {},
  extra: Partial<ConstructorParameters<typeof AzureBackend>[0]> = {},
) {
  const client = clientFor(rig, options);
  return new AzureBackend({
    api: sdkNicApi(client, RG, 10),
    podSubnetId: rig.podSubnetId,
    ...extra,
  });
}

const nodeOf = (vm: { providerID: string }, name: string): NodeRef => ({
  name,
  providerID: vm.providerID,
});

/** The NNC container a fulfiller would have written from a result. */
function asContainer(held: {
  ipAssignments: Array<{ name: string; ip: string }>;
  primaryIP: string;
}): NetworkContainer {
  return { id: 'nc', primaryIP: held.primaryIP, ipAssignments: held.ipAssignments };
}

describe('Azure backend against the ARM emulator (real SDK, HTTP)', function () {
  this.timeout(30_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('fills a node from 0 to 32 in one PUT and builds its container from the NIC', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const backend = backendFor(rig);
    await backend.start();
    const { held, short } = await backend.applyNic(nodeOf(vm!, 'node-0'), { add: 32, remove: [] });
    expect(short).to.equal(false);
    expect(held.ipAssignments).to.have.length(32);
    expect(held).to.include({
      subnetName: 'pods',
      subnetAddressSpace: '10.240.0.0/16',
      defaultGateway: '10.240.0.1',
      type: 'vnet',
      nodeIP: '10.224.0.4',
    });
    expect(rig.em.count('NetworkInterfaces.CreateOrUpdate', vm!.nicName)).to.be.at.most(2);
    const nic = rig.em.network.getNic(RG, vm!.nicName)!;
    const configs = nic.properties!.ipConfigurations as Array<{
      name: string;
      properties: { privateIPAddress: string };
    }>;
    for (const a of held.ipAssignments) {
      expect(configs.find((c) => c.name === a.name)?.properties.privateIPAddress).to.equal(a.ip);
    }
    expect(backend.subnets()).to.deep.equal([
      {
        name: 'pods',
        family: 4,
        cidr: '10.240.0.0/16',
        defaultGateway: '10.240.0.1',
        capacity: 65531,
        free: 65531 - 34, // the pod NIC's own address, the NC primary, 32 pod IPs
        armSubnet: { name: 'pods', id: rig.podSubnetId },
      },
    ]);
  });

  it('releases exactly the ids asked and nothing else', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const backend = backendFor(rig);
    const node = nodeOf(vm!, 'node-0');
    const first = await backend.applyNic(node, { add: 32, remove: [] });
    const remove = first.held.ipAssignments.slice(3, 8);
    const { held } = await backend.applyNic(node, {
      container: asContainer(first.held),
      add: 0,
      remove,
    });
    expect(held.ipAssignments).to.deep.equal(
      first.held.ipAssignments.filter((a) => !remove.includes(a)),
    );
    expect(held.primaryIP).to.equal(first.held.primaryIP);
    for (const r of remove) expect(rig.em.network.holdersOf(r.ip)).to.deep.equal([]);
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse).to.equal(34 - 5);
    const primary = (
      rig.em.network.getNic(RG, vm!.nicName)!.properties!.ipConfigurations as unknown[]
    )[0];
    expect(primary).to.deep.include({ name: 'ipconfig1' });
  });

  it('recovers from a 412 by re-reading, keeping the out-of-band change', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const backend = backendFor(rig);
    const node = nodeOf(vm!, 'node-0');
    const first = await backend.applyNic(node, { add: 8, remove: [] });
    rig.em.network.modifyNic(RG, vm!.nicName, (nic) => {
      nic.tags = { 'changed-by': 'operator' };
      nic.properties!.dnsSettings = { dnsServers: ['10.0.0.53'] };
    });
    const { held } = await backend.applyNic(node, {
      container: asContainer(first.held),
      add: 8,
      remove: [],
    });
    expect(held.ipAssignments).to.have.length(16);
    expect(backend.stats.preconditionFailed).to.equal(1);
    const nic = rig.em.network.getNic(RG, vm!.nicName)!;
    expect(nic.tags).to.deep.equal({ 'changed-by': 'operator' });
    expect(nic.properties!.dnsSettings).to.deep.equal({ dnsServers: ['10.0.0.53'] });
    expect(rig.em.requests.filter((r) => r.status === 412)).to.have.length(1);
  });

  it('waits for Retry-After on a 429 before writing', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const registry = new Registry();
    const backend = backendFor(rig, { metrics: new ArmMetrics(registry) });
    rig.em.inject({
      operation: 'NetworkInterfaces.CreateOrUpdate',
      status: 429,
      retryAfterSeconds: 1,
    });
    const { held } = await backend.applyNic(nodeOf(vm!, 'node-0'), { add: 4, remove: [] });
    expect(held.ipAssignments).to.have.length(4);
    const puts = rig.em.requests.filter((r) => r.operation === 'NetworkInterfaces.CreateOrUpdate');
    expect(puts.map((p) => p.status)).to.deep.equal([429, 200]);
    expect(puts[1]!.at - puts[0]!.at).to.be.at.least(990);
    const text = await registry.metrics();
    expect(text).to.match(/pool_monitor_arm_throttled_waits_total\{cause="retry-after"\} 1/);
    expect(text).to.match(
      /pool_monitor_arm_requests_total\{operation="NetworkInterfaces.CreateOrUpdate",code="429"\} 1/,
    );
  });

  for (const mode of ['sync', 'lro'] as const) {
    it(`SubnetIsFull (${mode}): reports the subnet full, gives what still fits, no hot loop`, async () => {
      // /26: 64 addresses, 5 reserved, 59 usable.
      rig = await startRig({
        podPrefix: '10.241.0.0/26',
        subnetFullMode: mode,
        ...(mode === 'lro' ? { operationMs: 20 } : {}),
      });
      // Three VMs, each with a pod NIC whose own address is in the pod subnet: 56 left.
      const [a, b] = addNodes(rig, 2);
      const [c] = addNodes(rig, 1, 'late');
      const backend = backendFor(rig, {}, { fullHoldMs: 60_000, minRelistMs: 0 });
      await backend.start();
      const first = await backend.applyNic(nodeOf(a!, 'node-0'), { add: 40, remove: [] }); // 41 taken, 15 free
      const nodeB = nodeOf(b!, 'node-1');
      const r = await backend.applyNic(nodeB, { add: 32, remove: [] });
      expect(r.short).to.equal(true);
      expect(r.held.ipAssignments).to.have.length(14); // 15 free, one is B's NC primary
      expect(rig.em.count('NetworkInterfaces.CreateOrUpdate', b!.nicName)).to.equal(2);
      expect(backend.subnets()[0]).to.include({ free: 0 });
      // Known full: asking again costs no PUT at all.
      const again = await backend.applyNic(nodeB, {
        container: asContainer(r.held),
        add: 10,
        remove: [],
      });
      expect(again).to.deep.equal({ held: r.held, short: true });
      expect(rig.em.count('NetworkInterfaces.CreateOrUpdate', b!.nicName)).to.equal(2);
      // Another node gives 5 back: B gets those 5 in one PUT, still short.
      await backend.applyNic(nodeOf(a!, 'node-0'), {
        container: asContainer(first.held),
        add: 0,
        remove: first.held.ipAssignments.slice(0, 5),
      });
      const more = await backend.applyNic(nodeB, {
        container: asContainer(r.held),
        add: 10,
        remove: [],
      });
      expect(more.short).to.equal(true);
      expect(more.held.ipAssignments).to.have.length(19);
      expect(rig.em.count('NetworkInterfaces.CreateOrUpdate', b!.nicName)).to.equal(3);
      // A node with no address left for its NC primary: a typed error, no container.
      const err = await backend
        .applyNic(nodeOf(c!, 'late-0'), { add: 1, remove: [] })
        .catch((e: unknown) => e);
      expect(err).to.be.instanceOf(SubnetFullError);
      expect(rig.em.count('NetworkInterfaces.CreateOrUpdate', c!.nicName)).to.equal(0);
    });
  }

  it('re-reads a rotated token file (kubelet ..data symlink swap) and never puts the token in errors', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const dir = await mkdtemp(join(tmpdir(), 'azure-token-'));
    try {
      const write = async (version: string, token: string) => {
        await mkdir(join(dir, version));
        await writeFile(join(dir, version, 'token'), `${token}\n`);
        await symlink(version, join(dir, '..data_tmp'));
        await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      };
      await write('..v1', 'token-one');
      await symlink(join('..data', 'token'), join(dir, 'token'));
      rig.em.acceptTokens(['token-one']);
      const backend = backendFor(rig, { tokens: new TokenFileSource(join(dir, 'token')) });
      const node = nodeOf(vm!, 'node-0');
      const first = await backend.applyNic(node, { add: 2, remove: [] });
      await write('..v2', 'token-two');
      rig.em.acceptTokens(['token-two']);
      const second = await backend.applyNic(node, {
        container: asContainer(first.held),
        add: 2,
        remove: [],
      });
      expect(second.held.ipAssignments).to.have.length(4);
      expect(rig.em.requests.filter((r) => r.status === 401)).to.deep.equal([]);
      rig.em.acceptTokens(['token-three']);
      const err = (await backend
        .applyNic(node, { container: asContainer(second.held), add: 2, remove: [] })
        .catch((e: unknown) => e)) as Error & { statusCode?: number };
      expect(err.statusCode).to.equal(401);
      expect(`${err.message} ${err.stack ?? ''} ${JSON.stringify(err)}`).not.to.include(
        'token-two',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a restarted backend adopts what an interrupted round left on the NIC: no leak, no second allocation', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const node = nodeOf(vm!, 'node-0');
    await backendFor(rig).applyNic(node, { add: 16, remove: [] }); // the status write never happened
    const taken = rig.em.network.counts.taken;
    const restarted = backendFor(rig);
    const { held } = await restarted.applyNic(node, { add: 16, remove: [] });
    expect(held.ipAssignments).to.have.length(16);
    expect(rig.em.network.counts.taken).to.equal(taken);
    expect(restarted.stats.puts).to.equal(0);
  });

  it('20 nodes filled at once: one NIC list, never above the token bucket, no address twice', async () => {
    rig = await startRig();
    const vms = addNodes(rig, 20);
    const bucket = { qps: 20, burst: 5 };
    const backend = backendFor(rig, { bucket: new TokenBucket(bucket) });
    // The emulator runs in this process: while its event loop stalls, calls
    // the bucket let go apart arrive together, so the check below allows the
    // longest stall seen (a CI run had 8 calls arrive within 46 ms).
    const stalls = monitorEventLoopDelay({ resolution: 10 });
    stalls.enable();
    const results = await Promise.all(
      vms.map((vm, i) => backend.applyNic(nodeOf(vm, `node-${i}`), { add: 10, remove: [] })),
    );
    stalls.disable();
    const slackMs = 100 + stalls.max / 1e6;
    for (const r of results) expect(r.held.ipAssignments).to.have.length(10);
    expect(rig.em.count('NetworkInterfaces.List')).to.equal(1);
    const ips = results.flatMap((r) => [
      r.held.primaryIP,
      ...r.held.ipAssignments.map((a) => a.ip),
    ]);
    expect(new Set(ips).size).to.equal(ips.length);
    const at = rig.em.requests.map((r) => r.at).sort((x, y) => x - y);
    expect(at.length).to.be.at.least(60);
    // Arrival jitter: 100 ms of slack on each window, and the longest stall.
    for (let i = 0; i < at.length; i++) {
      for (let j = i; j < at.length; j++) {
        expect(j - i + 1, `requests ${i}..${j} (slack ${Math.round(slackMs)} ms)`).to.be.at.most(
          bucket.burst + ((at[j]! - at[i]! + slackMs) * bucket.qps) / 1000,
        );
      }
    }
  });
});

describe("EmulatedCloud (the embedded cluster's Azure)", () => {
  it('gives nodes providerIDs whose NICs the backend finds and fills, and reports PUTs per node', async () => {
    const cloud = new EmulatedCloud();
    await cloud.start();
    try {
      const { backend } = await createAzureBackend(cloud.settings(1000, 100), {
        tokens: staticToken(CLOUD_TOKEN),
      });
      await backend.start();
      const ids = new Map(['aks-0', 'aks-1'].map((n) => [n, cloud.addNode(n)]));
      for (const [name, providerID] of ids) {
        expect(cloud.addNode(name)).to.equal(providerID);
        const { held } = await backend.applyNic({ name, providerID }, { add: 5, remove: [] });
        expect(held.subnetName).to.equal('aks-pods');
        expect(held.ipAssignments).to.have.length(5);
      }
      const report = cloud.report();
      expect(report.putsPerNode).to.deep.equal({ min: 1, max: 1, mean: 1 });
      expect(report.byOperationAndStatus['NetworkInterfaces.CreateOrUpdate 200']).to.equal(2);
    } finally {
      await cloud.stop();
    }
  });
});
