// A real `bin/pool-monitor fulfiller --backend azure` (its Azure settings from
// the environment, its token from a file) killed with SIGKILL right after a
// NIC PUT landed in ARM and before the NNC status that records it was
// written, three times over (fill, grow, release and grow), then restarted:
// nothing leaks and nothing is handed out twice. The NIC and the NNC statuses are the only record: the
// restarted process adopts the ipConfigurations its predecessor added.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLOUD_RESOURCE_GROUP,
  CLOUD_SUBSCRIPTION,
  CLOUD_TOKEN,
} from '../../harness/azure-emulator/cloud.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import type { AzureCluster } from '../support/azure-cluster.ts';
import {
  leaks,
  managedConfigs,
  safetyViolations,
  startAzureCluster,
} from '../support/azure-cluster.ts';
import { spawnFulfiller } from '../support/fulfiller-process.ts';
import type { FulfillerProcess } from '../support/fulfiller-process.ts';
import { waitFor } from '../support/wait.ts';

const NODES = ['node-0', 'node-1', 'node-2', 'node-3'];
const PUT = 'NetworkInterfaces.CreateOrUpdate';

describe('bin/pool-monitor fulfiller --backend azure killed mid-allocation', function () {
  this.timeout(240_000);
  let cluster: AzureCluster;
  let dir: string;
  const procs: FulfillerProcess[] = [];

  before(async () => {
    // Each PUT's operation runs 250 ms: a kill right after the PUT lands is
    // before the status write that records it.
    cluster = await startAzureCluster({ operationMs: 250 });
    dir = mkdtempSync(join(tmpdir(), 'pm-azure-kill-'));
    writeFileSync(join(dir, 'token'), CLOUD_TOKEN);
  });

  after(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const spawn = (): FulfillerProcess => {
    const p = spawnFulfiller(
      `azure-${procs.length}`,
      [
        ...['--kubeconfig', cluster.server.kubeconfigPath, '--leader-elect', 'false'],
        ...['--backend', 'azure', '--azure-token-file', join(dir, 'token')],
        ...['--azure-qps', '1000', '--azure-burst', '1000', '--workers', '4'],
      ],
      {
        AZURE_SUBSCRIPTION_ID: CLOUD_SUBSCRIPTION,
        AZURE_RESOURCE_GROUP: CLOUD_RESOURCE_GROUP,
        AZURE_POD_SUBNET_ID: cluster.cloud.podSubnetId,
        AZURE_RESOURCE_MANAGER_ENDPOINT: cluster.cloud.emulator.endpoint,
      },
    );
    procs.push(p);
    return p;
  };
  const puts = () =>
    cluster.cloud.emulator.requests.filter((r) => r.operation === PUT && r.status < 300).length;
  /** Waits for the next NIC PUT to land, then kills at once; returns the leaks at that instant. */
  const killAfterPut = async (p: FulfillerProcess): Promise<string[]> => {
    const before = puts();
    await waitFor('a NIC PUT', () => puts() > before, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}; ${p.name} said: ${p.output().slice(-2000)}`);
    });
    p.child.kill('SIGKILL');
    const orphans = leaks(cluster);
    expect(safetyViolations(cluster)).to.deep.equal([]);
    expect(await p.exited).to.equal('SIGKILL');
    return orphans;
  };
  const converged = (requested: number) =>
    waitFor(
      `every NNC with ${requested} IPs`,
      () =>
        NODES.every((n) => {
          const nnc = cluster.nncs().find((o) => o.metadata.name === n);
          const nc = nnc && dynamicContainers(nnc)[0];
          const notInUse = new Set((nnc?.spec?.ipsNotInUse as string[] | undefined) ?? []);
          return (
            nc?.ipAssignments?.length === requested &&
            nnc?.status?.status === 'Updated' &&
            nc.ipAssignments.every((a) => !notInUse.has(a.name))
          );
        }),
      30_000,
    );
  const idsOf = (nnc: NodeNetworkConfig | undefined) =>
    (nnc ? (dynamicContainers(nnc)[0]?.ipAssignments ?? []) : []).map((a) => a.name);

  it('restarts with neither a leak nor an address on two NNCs', async () => {
    // A kill right after a PUT lands is in the middle of that node's round,
    // before its status write (its operation still runs).
    const first = spawn();
    for (const n of NODES) await cluster.addNode(n);
    // A process's start (the Azure SDK loaded) takes seconds on a loaded machine.
    await waitFor('the NNCs', () => cluster.nncs().length === NODES.length, 60_000);
    for (const n of NODES) await cluster.setSpec(n, { requestedIPCount: 30 });
    const orphans = [await killAfterPut(first)];

    // While nothing runs, the nodes ask for more: the next process has PUTs to make.
    for (const n of NODES) await cluster.setSpec(n, { requestedIPCount: 36 });
    orphans.push(await killAfterPut(spawn()));

    // The nodes give back 10 each and ask for 40: releases and additions in one PUT.
    for (const n of NODES) {
      const ids = idsOf(await cluster.get(n));
      await cluster.setSpec(n, { requestedIPCount: 40, ipsNotInUse: ids.slice(0, 10) });
    }
    orphans.push(await killAfterPut(spawn()));
    // Every kill fell between a PUT and its status write: the NIC held what no NNC listed.
    for (const o of orphans) expect(o).to.not.deep.equal([]);

    const last = spawn();
    await converged(40);
    expect(leaks(cluster)).to.deep.equal([]);
    expect(safetyViolations(cluster)).to.deep.equal([]);
    // Every address taken from the pod subnet is on some NNC: 4 × (NC primary + 40).
    const held = NODES.reduce((sum, n) => sum + managedConfigs(cluster.cloud, n).length, 0);
    expect(held).to.equal(4 * 41);
    const { taken, freed } = cluster.cloud.emulator.network.counts;
    expect(taken - freed).to.equal(4 * 41);

    last.child.kill('SIGTERM');
    expect(await last.exited).to.equal(0);
  });
});
