// Issue 53: a 429 is not always the subscription's. A write to a NIC another
// operation is updating is answered 429 RetryableError
// (RetryableErrorDueToAnotherOperation, Retry-After): that NIC's writes wait,
// every other node's go on. An operation ARM cancels because a later one
// superseded it (CanceledAndSupersededDueToAnotherOperation) is re-read and
// recomputed, not a failure. Real SDK, over HTTP, against the emulator.
import { expect } from 'chai';
import { ArmBudget } from '../../src/azure/arm/budget.ts';
import { AzureBackend } from '../../src/azure/backend.ts';
import { sdkNicApi } from '../../src/azure/nic-api.ts';
import type { NodeRef } from '../../src/fulfiller/backend.ts';
import { nicKey } from '../../harness/azure-emulator/nic-model.ts';
import { waitFor } from '../support/wait.ts';
import { addNodes, clientFor, RG, startRig } from './helpers.ts';
import type { Rig } from './helpers.ts';

const nodeOf = (vm: { providerID: string }, name: string): NodeRef => ({
  name,
  providerID: vm.providerID,
});

describe('Azure backend: one busy NIC, one superseded operation (issue 53)', function () {
  this.timeout(30_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  const backendOn = (budget: ArmBudget) =>
    new AzureBackend({
      api: sdkNicApi(clientFor(rig, { bucket: budget }), RG, 10),
      podSubnetId: rig.podSubnetId,
    });

  it("a 429 RetryableErrorDueToAnotherOperation holds that NIC's writes only: another node is written at once", async () => {
    rig = await startRig({ quota: false });
    const [a, b] = addNodes(rig, 2);
    const budget = new ArmBudget({
      reads: { qps: 1000, burst: 1000 },
      writes: { qps: 1000, burst: 1000 },
    });
    const backend = backendOn(budget);
    await backend.start();
    // cloud-provider-azure's write to node-0's NIC runs 2 s.
    expect(rig.em.otherWriters.occupy(nicKey(RG, a!.nicName), 2_000)).to.equal(true);
    const zero = backend.applyNic(nodeOf(a!, 'node-0'), { add: 4, remove: [] });
    const refused = await waitFor('the 429 on node-0', () =>
      rig.em.requests.find((r) => r.status === 429 && r.nic === a!.nicName),
    );
    expect(refused.error).to.match(/^RetryableError: A retryable error occured\.$/);
    // node-1's round meanwhile: written at once, not after node-0's Retry-After.
    const { held } = await backend.applyNic(nodeOf(b!, 'node-1'), { add: 4, remove: [] });
    expect(held.ipAssignments).to.have.length(4);
    const oneAt = rig.em.requests.find(
      (r) => r.operation === 'NetworkInterfaces.CreateOrUpdate' && r.nic === b!.nicName,
    )!.at;
    expect(oneAt - refused.at, 'node-1 written during node-0 wait').to.be.below(1_000);
    const t = Date.now();
    await budget.writes.take();
    expect(Date.now() - t, 'the writes bucket is not paused').to.be.below(50);
    // node-0's round goes through once the other operation is over.
    expect((await zero).held.ipAssignments).to.have.length(4);
    const puts = rig.em.requests.filter(
      (r) => r.operation === 'NetworkInterfaces.CreateOrUpdate' && r.nic === a!.nicName,
    );
    // (A 412 first: the other writer's write moved the NIC's etag since it was listed.)
    expect(puts.map((p) => p.status).filter((s) => s !== 412)).to.deep.equal([429, 200]);
    expect(puts.at(-1)!.at - refused.at).to.be.at.least(1_500);
  });

  it('an operation ARM cancels as superseded is re-read and recomputed: the round ends written', async () => {
    rig = await startRig({ quota: false, operationMs: 400, pollRetryAfterSeconds: 0 });
    const [a] = addNodes(rig, 1);
    const backend = backendOn(
      new ArmBudget({ reads: { qps: 1000, burst: 1000 }, writes: { qps: 1000, burst: 1000 } }),
    );
    await backend.start();
    const round = backend.applyNic(nodeOf(a!, 'node-0'), { add: 4, remove: [] });
    await waitFor('our operation running', () =>
      rig.em.requests.some(
        (r) => r.operation === 'NetworkInterfaces.CreateOrUpdate' && r.status === 200,
      ),
    );
    expect(rig.em.otherWriters.supersede(nicKey(RG, a!.nicName))).to.equal(true);
    const { held } = await round;
    expect(held.ipAssignments).to.have.length(4);
    const nic = rig.em.network.getNic(RG, a!.nicName)!;
    expect(nic.tags).to.deep.equal({ superseded: 'true' });
    const puts = rig.em.requests.filter((r) => r.operation === 'NetworkInterfaces.CreateOrUpdate');
    expect(puts).to.have.length(2);
    expect(backend.stats.superseded).to.equal(1);
  });
});
