// The pod subnet's free count between usage reads: the rounds' own deltas
// keep it current, and a usage read in flight while a round lands must not
// wipe that round out (the read may have been counted before it).
import { expect } from 'chai';
import { parseSubnetId } from '../../src/azure/arm/ids.ts';
import type { NicApi } from '../../src/azure/nic-api.ts';
import { PodSubnet } from '../../src/azure/pod-subnet.ts';
import { PodSubnets } from '../../src/azure/pod-subnets.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';

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

describe('azure: pod subnets in use', () => {
  const subnetId = (vnet: string, name: string) =>
    `/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/${vnet}/subnets/${name}`;
  /** Each subnet as ARM would answer it: its name, a /24 of its own, 251 free. */
  const api = {
    subnet: (ref: { id: string; subnet: string; virtualNetwork: string }) =>
      Promise.resolve({
        id: ref.id,
        name: ref.subnet,
        addressPrefix: ref.virtualNetwork === 'v1' ? '10.1.0.0/24' : '10.2.0.0/24',
      }),
    subnetUsage: () => Promise.resolve({ limit: 251, currentValue: 0 }),
  } as unknown as NicApi;

  it('one entry per subnet, by its own name; a name two subnets share is published once, with one warning', async () => {
    const logs = new CaptureTransport();
    const subnets = new PodSubnets({ api, logger: createLogger({ transports: [logs] }) });
    for (const id of [
      subnetId('v1', 'pool-a'),
      subnetId('v1', 'Pool_B'),
      subnetId('v2', 'pool-a'),
    ]) {
      await subnets.read(id);
    }
    expect(subnets.of(subnetId('V1', 'POOL-A'))).to.equal(subnets.of(subnetId('v1', 'pool-a')));
    for (let i = 0; i < 3; i++) {
      expect(subnets.info().map((x) => [x.name, x.cidr])).to.deep.equal([
        ['pool-a', '10.1.0.0/24'],
        ['Pool_B', '10.1.0.0/24'],
      ]);
    }
    const warned = logs.records.filter((r) => r.level === 'warn').map((r) => [r.msg, r.subnet]);
    expect(warned).to.deep.equal([
      ['pod subnet name is not a Kubernetes name', 'Pool_B'],
      [
        'pod subnet name is shared by two subnets in use: one ClusterSubnetState for both',
        'pool-a',
      ],
    ]);
  });
});
