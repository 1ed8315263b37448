import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { PodModel } from '../../src/sim/pod-model.ts';

function storeWith(ips: number) {
  let now = 0;
  const store = openIpStore({ memory: true, now: () => now });
  const sync = (n: number) =>
    store.syncInventory([
      {
        id: 'nc',
        assignmentMode: 'dynamic',
        primaryIP: '10.0.0.1',
        subnetAddressSpace: '10.0.0.0/16',
        defaultGateway: '10.0.0.1',
        ipAssignments: Array.from({ length: n }, (_, i) => ({
          name: `ip-${i}`,
          ip: `10.0.1.${i + 1}`,
        })),
      },
    ]);
  sync(ips);
  return { store, sync, setNow: (t: number) => (now = t), now: () => now };
}

describe('sim/PodModel', () => {
  it('pods beyond the free IPs wait first come first served, and their waits are recorded', () => {
    const s = storeWith(2);
    const pods = new PodModel(s.store, s.now);
    pods.setDemand(2); // both placed at once
    s.setNow(1000);
    pods.setDemand(4); // two wait from 1 s
    expect(pods.waitingCount()).to.equal(2);
    s.setNow(3000);
    s.sync(3); // one more IP at 3 s: the older waiting pod gets it
    pods.place();
    expect(pods.waitingCount()).to.equal(1);
    s.setNow(4500);
    pods.setDemand(3); // a running pod finishes: its IP goes to the last waiting pod
    expect(pods.waitingCount()).to.equal(0);
    expect(pods.waitsSeconds).to.deep.equal([0, 0, 2, 3.5]);
    expect(pods.refusals).to.equal(2);
    expect(pods.runningCount()).to.equal(3);
    s.store.close();
  });

  it('when demand falls, running pods finish first and give their IPs back', () => {
    const s = storeWith(3);
    const pods = new PodModel(s.store, s.now);
    pods.setDemand(3);
    pods.setDemand(1);
    expect(pods.runningCount()).to.equal(1);
    expect(s.store.counts().Assigned).to.equal(1);
    expect(s.store.counts().Available).to.equal(2);
    s.store.close();
  });
});
