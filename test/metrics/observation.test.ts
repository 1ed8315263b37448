import { expect } from 'chai';
import { poolObservation } from '../../src/metrics/observation.ts';

describe('metrics: pool observation from a monitor snapshot', () => {
  it('takes figures from the snapshot and labels from the first dynamic container', () => {
    const obs = poolObservation(
      { demand: 5, request: 16, target: 16, exhausted: false, scaler: { batch: 16, max: 250 } },
      [
        { id: 'a', primaryIP: '10.0.0.4', subnetName: 'podnet', subnetAddressSpace: '10.0.0.0/16' },
        { id: 'b', primaryIP: '10.0.0.4' },
        { id: 'c', primaryIP: '10.0.0.5' },
      ],
    );
    expect(obs).to.deep.equal({
      demand: 5,
      request: 16,
      target: 16,
      exhausted: false,
      batch: 16,
      max: 250,
      subnet: 'podnet',
      subnetCIDR: '10.0.0.0/16',
      primaryIPs: 2,
    });
  });

  it("carries the release policy's idle account with the monitor's writes, when the policy keeps one", () => {
    const account = {
      budget: 2,
      heldIdleIpSeconds: 10,
      cnsV2IdleIpSeconds: 10,
      idleRatio: 1,
      window: { seconds: 3600, heldIdleIpSeconds: 10, cnsV2IdleIpSeconds: 10, idleRatio: 1 },
      budgetLeftIpSeconds: 10,
      cnsV2Writes: 3,
      cnsV2Churn: 16,
      churn: 16,
    };
    expect(
      poolObservation({ writes: 2, damping: { policy: 'auto', account } }).idleAccount,
    ).to.deep.equal({ policy: 'auto', account, writes: 2 });
    expect(poolObservation({ writes: 2, damping: { policy: 'delay-30s' } })).not.to.have.property(
      'idleAccount',
    );
  });

  it('gives each address family its own observation from the pool by family', () => {
    const counts = { Available: 1, Assigned: 2, PendingRelease: 0, PendingProgramming: 0 };
    const obs = poolObservation(
      { request: 3 },
      [],
      [
        {
          name: 'IPv4',
          subnet: 's4',
          subnetAddressSpace: '10.0.0.0/16',
          exhausted: false,
          primaryIPs: 1,
          counts,
        },
        { name: 'IPv6', exhausted: true, primaryIPs: 0, counts },
      ],
    );
    expect(obs.families).to.deep.equal([
      {
        family: 'IPv4',
        subnet: 's4',
        subnetCIDR: '10.0.0.0/16',
        primaryIPs: 1,
        exhausted: false,
        counts,
      },
      { family: 'IPv6', primaryIPs: 0, exhausted: true, counts },
    ]);
  });

  it('leaves out what the monitor does not know yet', () => {
    expect(poolObservation({})).to.deep.equal({ exhausted: false, primaryIPs: 0 });
  });
});
