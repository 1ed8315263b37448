// Whose a 429 is (src/azure/arm/throttle-scope.ts): one busy resource's (its
// writes wait, nobody else's) or the subscription's (every call of the kind
// slows down). The bodies and headers are ARM's, as the emulator answers them.
import { expect } from 'chai';
import { errorCodes, throttleScope } from '../../src/azure/arm/throttle-scope.ts';
import { ArmBudget } from '../../src/azure/arm/budget.ts';
import { waitFor } from '../support/wait.ts';
import { addNodes, clientFor, RG, startRig } from './helpers.ts';
import type { Rig } from './helpers.ts';

const answer = (headers: Record<string, string>, body?: unknown) => ({
  headers: { get: (n: string) => headers[n] },
  bodyAsText: body === undefined ? undefined : JSON.stringify(body),
});

const BUSY = {
  error: {
    code: 'RetryableError',
    message: 'A retryable error occured.',
    details: [
      {
        code: 'RetryableErrorDueToAnotherOperation',
        message:
          'Operation PutNetworkInterfaceOperation (f9827d3e-8995-4afd-ac35-123c1b9e78a4) is updating resource a43d33d7-17fa-441d-9b46-77f68146e4c4. The call can be retried in 14 seconds.',
      },
    ],
  },
};

describe('whose a 429 is', () => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('one resource: another operation on it, or its own Compute policy spent', () => {
    const writes = 'x-ms-ratelimit-remaining-subscription-writes';
    expect(throttleScope(answer({ [writes]: '1199' }, BUSY), 'write', 20)).to.equal('resource');
    expect(
      throttleScope(
        answer(
          {
            [writes]: '1100',
            'x-ms-ratelimit-remaining-resource': 'Microsoft.Compute/PutVMScaleSetVM3Min;0',
          },
          { error: { code: 'OperationNotAllowed', details: [{ code: 'TooManyRequests' }] } },
        ),
        'write',
        20,
      ),
    ).to.equal('resource');
    expect(errorCodes(JSON.stringify(BUSY))).to.deep.equal([
      'RetryableError',
      'RetryableErrorDueToAnotherOperation',
    ]);
  });

  it('the subscription: ARM says so, its count for the kind is low, or nothing names one resource', () => {
    const writes = 'x-ms-ratelimit-remaining-subscription-writes';
    expect(
      throttleScope(
        answer({ [writes]: '0' }, { error: { code: 'SubscriptionRequestsThrottled' } }),
        'write',
        20,
      ),
    ).to.equal('subscription');
    // Busy, but the subscription is spent too: everything slows down.
    expect(throttleScope(answer({ [writes]: '3' }, BUSY), 'write', 20)).to.equal('subscription');
    expect(throttleScope(answer({}), 'write', 20)).to.equal('subscription');
    expect(throttleScope(answer({}, 'not json'), 'read', 25)).to.equal('subscription');
  });

  it("ARM's own throttling through the SDK: every write of the subscription waits", async () => {
    rig = await startRig({
      quota: { reads: { size: 250, perSecond: 25 }, writes: { size: 1, perSecond: 1 } },
    });
    const [a, b] = addNodes(rig, 2);
    const budget = new ArmBudget({
      reads: { qps: 1000, burst: 1000 },
      writes: { qps: 1000, burst: 1000 },
      lowWater: { reads: 0, writes: 0 },
    });
    const client = clientFor(rig, { bucket: budget });
    const nicA = await client.networkInterfaces.get(RG, a!.nicName);
    const nicB = await client.networkInterfaces.get(RG, b!.nicName);
    await client.networkInterfaces.createOrUpdate(RG, a!.nicName, { ...nicA, tags: { n: '1' } });
    const second = client.networkInterfaces.createOrUpdate(RG, b!.nicName, {
      ...nicB,
      tags: { n: '1' },
    });
    const refused = await waitFor('the 429', () => rig!.em.requests.find((r) => r.status === 429));
    expect(refused.error).to.match(/^SubscriptionRequestsThrottled: Number of 'write' requests/);
    // Any write, to any resource, waits for the Retry-After (1 s).
    const t = Date.now();
    await budget.writes.take();
    expect(Date.now() - t).to.be.at.least(500);
    await second;
  });
});
