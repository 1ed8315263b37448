// The pod subnet's free count between usage reads: the rounds' own deltas
// keep it current, and a usage read in flight while a round lands must not
// wipe that round out (the read may have been counted before it).
import { expect } from 'chai';
import fc from 'fast-check';
import { parseSubnetId } from '../../src/azure/arm/ids.ts';
import { cssNameOf, heldContainer, podSubnetFacts } from '../../src/azure/container.ts';
import { NC_PRIMARY_NAME } from '../../src/azure/nic-plan.ts';
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

  it('one entry per subnet, by its own name (an ARM name Kubernetes refuses mapped, said once); a name two subnets share is published once, with one warning', async () => {
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
        [cssNameOf('Pool_B'), '10.1.0.0/24'],
      ]);
    }
    expect(cssNameOf('Pool_B')).to.match(/^pool-b-[0-9a-f]{8}$/);
    const renamed = logs.records
      .filter((r) => r.level === 'info')
      .map((r) => [r.subnet, r.clusterSubnetState]);
    expect(renamed).to.deep.equal([['Pool_B', cssNameOf('Pool_B')]]);
    const warned = logs.records.filter((r) => r.level === 'warn').map((r) => [r.msg, r.subnet]);
    expect(warned).to.deep.equal([
      [
        'pod subnet name is shared by two subnets in use: one ClusterSubnetState for both',
        'pool-a',
      ],
    ]);
  });
});

describe('azure: ClusterSubnetState names of ARM subnet names', () => {
  const DNS_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  /** ARM's subnet names: 1-80 of [A-Za-z0-9_.-], starting alphanumeric, ending alphanumeric or _. */
  const armName = fc
    .tuple(
      fc.constantFrom(...'aZ9'),
      fc.string({ unit: fc.constantFrom(...'aB3_.-'), maxLength: 78 }),
      fc.constantFrom(...'z0_'),
    )
    .map(([a, mid, z]) => a + mid + z);

  it('a Kubernetes name stays as it is; any other maps to a valid, stable name, distinct per ARM name', () => {
    for (const ok of ['aks-pods', 'pods', 'pods.v2', '10-240']) expect(cssNameOf(ok)).to.equal(ok);
    expect(cssNameOf('AKS_Pods')).to.match(/^aks-pods-[0-9a-f]{8}$/);
    expect(cssNameOf('pods_')).to.match(/^pods-[0-9a-f]{8}$/);
    expect(cssNameOf('a..b')).to.match(/^a--b-[0-9a-f]{8}$/);
    expect(cssNameOf('Pods')).to.not.equal(cssNameOf('pods'));
    fc.assert(
      fc.property(armName, armName, (a, b) => {
        const name = cssNameOf(a);
        expect(name, a).to.match(DNS_1123_SUBDOMAIN);
        expect(name.length).to.be.at.most(253);
        expect(cssNameOf(a)).to.equal(name);
        if (a !== b) expect(cssNameOf(b)).to.not.equal(name);
      }),
      { numRuns: 2000 },
    );
  });

  it("the NC's subnetName is the CSS name (DESIGN.md: a CSS applies to a node when its name equals the NC's subnetName)", () => {
    const id =
      '/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/AKS_Pods';
    const facts = podSubnetFacts({ id, name: 'AKS_Pods', addressPrefix: '10.240.0.0/24' });
    expect(facts).to.deep.include({ armName: 'AKS_Pods', name: cssNameOf('AKS_Pods') });
    const held = heldContainer(
      {
        ipConfigurations: [
          { name: 'ipconfig1', primary: true, privateIPAddress: '10.240.0.4', subnet: { id } },
          { name: NC_PRIMARY_NAME, privateIPAddress: '10.240.0.5', subnet: { id } },
        ],
      },
      facts,
    );
    expect(held?.subnetName).to.equal(cssNameOf('AKS_Pods'));
  });
});
