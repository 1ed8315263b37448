// Compute's per-VM limits (issue 45, item 4): the emulator charges each
// scale-set VM's updates to a bucket of 12 refilled 4 a minute, says what is
// left in x-ms-ratelimit-remaining-resource and answers 429 with Retry-After
// beyond; the budget reads the header and holds the next write to that VM.
import { expect } from 'chai';
import {
  ArmBudget,
  RESOURCE_REFILL_MS,
  remainingOfResource,
  resourceOf,
} from '../../src/azure/arm/budget.ts';
import { PerVmQuota } from '../../harness/azure-emulator/quota.ts';
import type { BucketClock } from '../../src/azure/arm/token-bucket.ts';

describe("Compute's per-VM update budget", () => {
  it('the emulator: 12 updates, then 429 with Retry-After 15 s; one more every 15 s', () => {
    const q = new PerVmQuota();
    const vm =
      '/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/0';
    const lefts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = q.charge(vm, 0);
      expect(r).to.not.have.property('retryAfter');
      lefts.push(r.header['x-ms-ratelimit-remaining-resource']!);
    }
    expect(lefts[0]).to.equal('Microsoft.Compute/PutVMScaleSetVM3Min;11');
    expect(lefts[11]).to.equal('Microsoft.Compute/PutVMScaleSetVM3Min;0');
    expect(q.charge(vm, 0)).to.deep.include({ retryAfter: 15 });
    expect(q.charge(vm, 15_000)).to.not.have.property('retryAfter');
    // Another VM has its own bucket.
    expect(q.charge(`${vm}1`, 0)).to.not.have.property('retryAfter');
    expect(q.throttled).to.equal(1);
  });

  it('the budget reads the header: the lowest count, and holds the next write to that VM', async () => {
    expect(
      remainingOfResource('Microsoft.Compute/PutVM3Min;3,Microsoft.Compute/PutVM30Min;40'),
    ).to.equal(3);
    expect(remainingOfResource(undefined)).to.equal(undefined);
    expect(resourceOf('https://management.azure.com/subscriptions/S/x?api-version=1')).to.equal(
      '/subscriptions/s/x',
    );
    let t = 0;
    const slept: number[] = [];
    const clock: BucketClock = {
      now: () => t,
      sleep: async (ms) => {
        slept.push(ms);
        t += ms;
      },
    };
    const budget = new ArmBudget(
      { reads: { qps: 10, burst: 10 }, writes: { qps: 10, burst: 10 } },
      clock,
    );
    const url = 'https://arm/subscriptions/S/vm/0?api-version=1';
    expect(budget.observeResource(url, 'Microsoft.Compute/PutVMScaleSetVM3Min;5')).to.equal(0);
    expect(await budget.resourceReady(url)).to.equal(0);
    expect(budget.observeResource(url, 'Microsoft.Compute/PutVMScaleSetVM3Min;0')).to.equal(
      2 * RESOURCE_REFILL_MS,
    );
    expect(await budget.resourceReady('https://arm/subscriptions/S/vm/1')).to.equal(0);
    expect(await budget.resourceReady(url)).to.equal(2 * RESOURCE_REFILL_MS);
    expect(slept).to.deep.equal([2 * RESOURCE_REFILL_MS]);
    expect(await budget.resourceReady(url)).to.equal(0);
  });
});

describe('the emulator’s realistic operation times', () => {
  it('a NIC PUT runs 10–60 s, a scale-set VM update 30–120 s; fast runs operationMs', async () => {
    const { EmulatedNetwork } = await import('../../harness/azure-emulator/network.ts');
    let r = 0;
    const net = new EmulatedNetwork({ subscriptionId: 's', timing: 'realistic', random: () => r });
    expect(net.durationOf('nic')).to.equal(10_000);
    expect(net.durationOf('vm')).to.equal(30_000);
    r = 1;
    expect(net.durationOf('nic')).to.equal(60_000);
    expect(net.durationOf('vm')).to.equal(120_000);
    const fast = new EmulatedNetwork({ subscriptionId: 's', operationMs: 7 });
    expect(fast.durationOf('vm')).to.equal(7);
  });
});
