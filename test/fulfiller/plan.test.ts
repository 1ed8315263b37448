import { expect } from 'chai';
import { neededAddresses, orderByNeed, planNode } from '../../src/fulfiller/plan.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';

function nnc(spec: unknown, ips: Array<[string, string]> | undefined): NodeNetworkConfig {
  return {
    metadata: { name: 'n1' },
    spec: spec as NodeNetworkConfig['spec'],
    status:
      ips === undefined
        ? undefined
        : {
            networkContainers: [
              {
                id: 'nc',
                assignmentMode: 'dynamic',
                primaryIP: '10.0.0.3',
                ipAssignments: ips.map(([name, ip]) => ({ name, ip })),
              },
            ],
          },
  };
}

describe('fulfiller/plan', () => {
  it('a new NNC without a container needs its request', () => {
    const p = planNode(nnc({ requestedIPCount: 16 }, undefined), 250);
    expect(p.container).to.equal(undefined);
    expect(p.allocate).to.equal(16);
    expect(neededAddresses(p)).to.equal(16);
    expect(neededAddresses(planNode(nnc({}, undefined), 250))).to.equal(1);
  });

  it('removes exactly the ids in ipsNotInUse and keeps the rest in order', () => {
    const p = planNode(
      nnc({ requestedIPCount: 2, ipsNotInUse: ['b', 'zz'] }, [
        ['a', '10.0.0.4'],
        ['b', '10.0.0.5'],
        ['c', '10.0.0.6'],
      ]),
      250,
    );
    expect(p.keep.map((a) => a.name)).to.deep.equal(['a', 'c']);
    expect(p.release.map((a) => a.name)).to.deep.equal(['b']);
    expect(p.allocate).to.equal(0);
    expect(neededAddresses(p)).to.equal(-1);
  });

  it('never releases beyond ipsNotInUse even above the request', () => {
    const p = planNode(nnc({ requestedIPCount: 0 }, [['a', '10.0.0.4']]), 250);
    expect(p.release).to.have.length(0);
    expect(p.keep).to.have.length(1);
    expect(neededAddresses(p)).to.equal(0);
  });

  it('caps the request at max', () => {
    expect(planNode(nnc({ requestedIPCount: 900 }, []), 250).allocate).to.equal(250);
  });

  it('reports malformed specs and plans nothing', () => {
    for (const spec of [
      { requestedIPCount: -1 },
      { requestedIPCount: 1.5 },
      { requestedIPCount: '16' },
      { ipsNotInUse: 'a' },
      { ipsNotInUse: [1] },
    ]) {
      const p = planNode(nnc(spec, []), 250);
      expect(p.invalid, JSON.stringify(spec)).to.be.a('string');
      expect(p.allocate).to.equal(0);
      expect(neededAddresses(p)).to.equal(0);
    }
  });

  it('orders the largest deficit first, then the largest surplus, then idle', () => {
    expect(
      orderByNeed([
        { node: 'idle', needed: 0 },
        { node: 'rel2', needed: -2 },
        { node: 'def3', needed: 3 },
        { node: 'rel9', needed: -9 },
        { node: 'def40', needed: 40 },
      ]),
    ).to.deep.equal(['def40', 'def3', 'rel9', 'rel2', 'idle']);
  });
});
