// The pod subnet's free count between usage reads: the rounds' own deltas
// keep it current, and a usage read in flight while a round lands must not
// wipe that round out (the read may have been counted before it).
import { expect } from 'chai';
import { parseSubnetId } from '../../src/azure/arm/ids.ts';
import type { NicApi } from '../../src/azure/nic-api.ts';
import { PodSubnet } from '../../src/azure/pod-subnet.ts';

const ID =
  '/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/aks-pods';

function fakeApi(): { api: NicApi; answerUsage: (inUse: number) => void } {
  let answer: (inUse: number) => void = () => {};
  const api = {
    subnet: () =>
      Promise.resolve({
        id: ID,
        name: 'aks-pods',
        addressPrefix: '10.240.0.0/24',
      }),
    subnetUsage: () =>
      new Promise((resolve) => {
        answer = (inUse) => resolve({ limit: 251, currentValue: inUse });
      }),
  } as unknown as NicApi;
  return { api, answerUsage: (inUse) => answer(inUse) };
}

describe('azure: pod subnet free count', () => {
  it('follows the rounds between usage reads', async () => {
    const { api, answerUsage } = fakeApi();
    const subnet = new PodSubnet({ api, ref: parseSubnetId(ID) });
    await subnet.get();
    const read = subnet.refresh();
    answerUsage(10);
    await read;
    subnet.record(16, 0);
    subnet.record(0, 4);
    expect(subnet.info()[0]?.free).to.equal(251 - 22);
  });

  it('keeps a round that lands while a usage read is in flight', async () => {
    const { api, answerUsage } = fakeApi();
    const subnet = new PodSubnet({ api, ref: parseSubnetId(ID) });
    await subnet.get();
    const first = subnet.refresh();
    answerUsage(10);
    await first;
    // A read is sent; a round takes 30 before its answer (which counted 10).
    const second = subnet.refresh();
    subnet.record(30, 0);
    answerUsage(10);
    await second;
    expect(subnet.info()[0]?.free).to.equal(251 - 40);
  });
});
