// Dual-stack and IPv6-only through `bin/pool-monitor fulfiller` (issue 54;
// docs/design/contracts.md, "Address families"): `--subnet` once per
// family gives every NNC one dynamic container per family, each holding
// `spec.requestedIPCount` addresses of its subnet, a ClusterSubnetState per
// subnet, and releases of either family's ids.
import { expect } from 'chai';
import { isIP } from 'node:net';
import { containerFamily } from '../../src/nnc/family.ts';
import type { ClusterSubnetState, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { CSS_PLURAL, dynamicContainers } from '../../src/nnc/types.ts';
import { spawnFulfiller, type FulfillerProcess } from '../support/fulfiller-process.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { NS } from '../support/test-cluster.ts';
import { waitFor } from '../support/wait.ts';

describe('fulfiller process: address families', function () {
  this.timeout(60_000);
  let cluster: StrictCluster;
  const procs: FulfillerProcess[] = [];

  const start = async (...subnets: string[]) => {
    const kubeconfig = await cluster.kubeconfigFile('fulfiller');
    const p = spawnFulfiller('f', [
      ...['--kubeconfig', kubeconfig, '--leader-elect', 'false', '--batch', '4'],
      ...subnets.flatMap((s) => ['--subnet', s]),
    ]);
    procs.push(p);
    await p.waitLog('fulfiller leads', 20_000);
    return p;
  };
  /** The NNC once each of its dynamic containers holds `n` addresses. */
  const served = (name: string, families: number, n: number) =>
    waitFor(`${name}: ${families} container(s) of ${n}`, async () => {
      const o = await cluster.getNnc(name);
      const ncs = o ? dynamicContainers(o) : [];
      return ncs.length === families && ncs.every((nc) => nc.ipAssignments?.length === n)
        ? o
        : undefined;
    });
  const family = (o: NodeNetworkConfig, f: 4 | 6) =>
    dynamicContainers(o).find((nc) => containerFamily(nc) === f)!;

  beforeEach(async () => {
    cluster = await strictCluster();
  });

  afterEach(async () => {
    for (const p of procs.splice(0)) {
      p.child.kill('SIGTERM');
      expect(await p.exited, p.output()).to.equal(0);
    }
    await cluster.close();
  });

  it('--subnet twice: one container per family, each with the request, a CSS per subnet, releases of both', async () => {
    await start('10.240.0.0/24', 'fd00:10:240::/112');
    await cluster.addNode('node-a');
    await cluster.setSpec('node-a', { requestedIPCount: 8 });
    const o = await served('node-a', 2, 8);
    const v4 = family(o, 4);
    const v6 = family(o, 6);
    expect(v4.subnetAddressSpace).to.equal('10.240.0.0/24');
    expect(v6.subnetAddressSpace).to.equal('fd00:10:240::/112');
    expect(v6.defaultGateway).to.equal('fd00:10:240::1');
    expect(isIP(v6.primaryIP!)).to.equal(6);
    for (const a of v6.ipAssignments!) expect(isIP(a.ip), a.ip).to.equal(6);
    for (const a of v4.ipAssignments!) expect(isIP(a.ip), a.ip).to.equal(4);
    expect(v4.id).to.not.equal(v6.id);
    expect(o.status?.assignedIPCount).to.equal(8);
    const css = (await cluster.objects.listNamespacedCustomObject({
      group: 'acn.azure.com',
      version: 'v1alpha1',
      namespace: NS,
      plural: CSS_PLURAL,
    })) as { items: ClusterSubnetState[] };
    expect(css.items.map((c) => c.metadata.name).sort()).to.deep.equal(
      [v4.subnetName, v6.subnetName].sort(),
    );
    // The node gives back two of each family (scaled down to 4): both go.
    const ids = [...v4.ipAssignments!.slice(0, 4), ...v6.ipAssignments!.slice(0, 4)].map(
      (a) => a.name,
    );
    await cluster.setSpec('node-a', { requestedIPCount: 4, ipsNotInUse: ids });
    const after = await served('node-a', 2, 4);
    const left = dynamicContainers(after).flatMap((nc) => nc.ipAssignments!.map((a) => a.name));
    expect(left.filter((id) => ids.includes(id))).to.deep.equal([]);
  });

  it('--subnet once with IPv6: IPv6-only', async () => {
    await start('fd00:10:240::/112');
    await cluster.addNode('node-b');
    await cluster.setSpec('node-b', { requestedIPCount: 4 });
    const o = await served('node-b', 1, 4);
    expect(family(o, 6).subnetAddressSpace).to.equal('fd00:10:240::/112');
  });
});
