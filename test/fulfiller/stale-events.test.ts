// Review defect 2 (docs/design/fulfiller.md#review-defects): after a 409 the fulfiller re-reads an NNC,
// writes a status without address X and frees X; a late watch event carrying
// the older status must not mark X used again (X would be held by no NNC,
// lost until restart, and the free count would drift).
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { FakeClock } from './fake-clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { newFulfiller } from './harness.ts';

describe('fulfiller: a late watch event never brings a freed address back (defect 2)', () => {
  it('after a 409 and a re-read, an older status delivered late changes nothing', async () => {
    const cluster = new FakeCluster();
    const clock = new FakeClock();
    const config = makeFulfillerConfig({ subnet: '10.240.0.0/24', minIntervalMs: 0 });
    const { fulfiller, settle } = newFulfiller({ cluster, clock, config, logger: silentLogger() });
    const capacity = 251;

    cluster.setSpec('n1', { requestedIPCount: 4 });
    await settle();
    const filled: NodeNetworkConfig = structuredClone(cluster.nncs.get('n1')!);
    const ids = dynamicContainers(filled)[0]!.ipAssignments!.map((a) => a.name);
    expect(fulfiller.stats().subnets[0]!.free).to.equal(capacity - 5);

    // The node gives one IP back; the first status write conflicts, the
    // fulfiller re-reads, writes the status without it and frees it.
    cluster.failWrites.push(409);
    cluster.setSpec('n1', { requestedIPCount: 3, ipsNotInUse: [ids[0]!] });
    await settle();
    expect(dynamicContainers(cluster.nncs.get('n1')!)[0]!.ipAssignments).to.have.length(3);
    expect(fulfiller.stats().subnets[0]!.free).to.equal(capacity - 4);

    // Now the watch delivers, late, the NNC as it was before the release.
    fulfiller.upsert(structuredClone(filled));
    await settle();
    fulfiller.resync();
    await settle();

    const held = cluster.holders().size;
    expect(held).to.equal(4);
    expect(fulfiller.stats().subnets[0]!.free, 'free count after the late event').to.equal(
      capacity - held,
    );
    await fulfiller.stop();
  });
});
