// Which replica leads, as the chaos harness reads it from the Lease: the
// invariant watch counts a node without an NNC only while one does.
import { expect } from 'chai';
import { leaseHolder, someReplicaLeads } from '../../../harness/embedded/chaos/lease-holder.ts';

describe('chaos: the Lease holder', () => {
  const t0 = Date.parse('2026-11-28T10:00:00.000Z');
  const lease = {
    holderIdentity: 'fulfiller-1_0b7c',
    renewTime: '2026-11-28T10:00:00.000000Z',
    leaseDurationSeconds: 4,
  };
  const replicas = [
    { name: 'fulfiller-0', running: true },
    { name: 'fulfiller-1', running: true },
  ];

  it('names the replica whose identity holds the Lease, none for a stranger', () => {
    expect(leaseHolder(lease, replicas)?.name).to.equal('fulfiller-1');
    expect(leaseHolder({ ...lease, holderIdentity: 'fulfiller-10_x' }, replicas)).to.equal(
      undefined,
    );
    expect(leaseHolder(undefined, replicas)).to.equal(undefined);
  });

  it('leads while its holder runs and the Lease has not run out', () => {
    expect(someReplicaLeads(lease, replicas, t0 + 3_999)).to.equal(true);
    expect(someReplicaLeads(lease, replicas, t0 + 4_000)).to.equal(false);
    const killed = [replicas[0]!, { name: 'fulfiller-1', running: false }];
    expect(someReplicaLeads(lease, killed, t0 + 1_000)).to.equal(false);
    expect(someReplicaLeads({ ...lease, renewTime: undefined }, replicas, t0)).to.equal(false);
    expect(someReplicaLeads(undefined, replicas, t0)).to.equal(false);
  });
});
