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

  it('leaves out what the monitor does not know yet', () => {
    expect(poolObservation({})).to.deep.equal({ exhausted: false, primaryIPs: 0 });
  });
});
