// The node API on the real SQLite IP store (in memory): the CNS flows end to
// end, and garbage bodies leave the durable store untouched.
import { expect } from 'chai';
import fc from 'fast-check';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { call, podRequest, post, startApi } from './harness.ts';
import type { Harness } from './harness.ts';

const REQ = '/network/requestipconfigs';
const REL = '/network/releaseipconfigs';

function container(n: number): NetworkContainer {
  return {
    id: 'nc-a',
    assignmentMode: 'dynamic',
    type: 'vnet',
    primaryIP: '10.10.0.4',
    subnetName: 'podnet',
    subnetAddressSpace: '10.10.0.0/16',
    defaultGateway: '10.10.0.1',
    version: 1,
    ipAssignments: Array.from({ length: n }, (_, i) => ({
      name: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      ip: `10.10.1.${i + 1}`,
    })),
  };
}

interface IpConfigsBody {
  podIPInfo: {
    PodIPConfig: { IPAddress: string; PrefixLength: number };
    NetworkContainerPrimaryIPConfig: {
      IPSubnet: { IPAddress: string; PrefixLength: number };
      GatewayIPAddress: string;
    };
  }[];
  response: { ReturnCode: number; Message: string };
}

describe('node api on the SQLite IP store', () => {
  let store: SqliteIpStore;
  let h: Harness;
  beforeEach(async () => {
    store = openIpStore({ memory: true, now: () => 1_700_000_000_000 });
    store.syncInventory([container(3)]);
    h = await startApi(store);
  });
  afterEach(async () => {
    await h.close();
    store.close();
  });

  it('assigns with the container data, idempotently, and runs out with code 32', async () => {
    const a = (await post(h.port, REQ, podRequest(1))).json as IpConfigsBody;
    expect(a.response.ReturnCode).to.equal(0);
    expect(a.podIPInfo[0]?.PodIPConfig.PrefixLength).to.equal(16);
    expect(a.podIPInfo[0]?.NetworkContainerPrimaryIPConfig).to.deep.include({
      IPSubnet: { IPAddress: '10.10.0.4', PrefixLength: 16 },
      GatewayIPAddress: '10.10.0.1',
    });
    expect((await post(h.port, REQ, podRequest(1))).json).to.deep.equal(a);
    await post(h.port, REQ, podRequest(2));
    await post(h.port, REQ, podRequest(3));
    const none = (await post(h.port, REQ, podRequest(4))).json as IpConfigsBody;
    expect(none.response.ReturnCode).to.equal(32);
    expect(store.counts()).to.deep.include({ Assigned: 3, Available: 0 });
  });

  it('release frees the IP, is idempotent, and the debug listing agrees', async () => {
    await post(h.port, REQ, podRequest(1));
    await post(h.port, REL, podRequest(1));
    await post(h.port, REL, podRequest(1));
    expect(store.counts()).to.deep.include({ Assigned: 0, Available: 3 });
    const res = await post(h.port, '/debug/ipaddresses', { IPConfigStateFilter: ['Available'] });
    const list = (res.json as { IPConfigurationStatus: { NCID: string; State: string }[] })
      .IPConfigurationStatus;
    expect(list).to.have.length(3);
    expect(list.every((s) => s.NCID === 'nc-a' && s.State === 'Available')).to.be.true;
  });

  it('a desired IP that is not Available is code 32, not a crash', async () => {
    const res = await post(h.port, REQ, podRequest(1, { desiredIPAddresses: ['10.99.0.1'] }));
    expect(res.status).to.equal(200);
    expect((res.json as IpConfigsBody).response.ReturnCode).to.equal(32);
    expect(store.counts().Assigned).to.equal(0);
  });

  it('garbage bodies leave the durable store exactly as it was (fast-check)', async () => {
    await post(h.port, REQ, podRequest(1));
    const before = JSON.stringify(store.list());
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(REQ, REL),
        fc.oneof(fc.string({ maxLength: 100 }), fc.json({ maxDepth: 2 })),
        async (path, body) => {
          const res = await call(h.port, 'POST', path, body);
          if (res.status === 200) return; // a body that happens to be valid: not garbage
          expect(res.status).to.be.within(400, 499);
          expect(JSON.stringify(store.list())).to.equal(before);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('node api on the SQLite IP store, dual-stack', () => {
  let store: SqliteIpStore;
  let h: Harness;
  const v6: NetworkContainer = {
    id: 'nc-v6',
    assignmentMode: 'dynamic',
    type: 'vnet',
    primaryIP: 'fd00:10::4',
    subnetName: 'podnet-v6',
    subnetAddressSpace: 'fd00:10::/112',
    defaultGateway: 'fd00:10::1',
    version: 1,
    ipAssignments: [
      { name: '00000000-0000-4000-8000-0000000006a1', ip: 'fd00:10::a1' },
      { name: '00000000-0000-4000-8000-0000000006a2', ip: 'fd00:10::a2' },
    ],
  };
  beforeEach(async () => {
    store = openIpStore({ memory: true, now: () => 1_700_000_000_000 });
    // The IPv6 container first in the status: the answer still lists IPv4 first.
    store.syncInventory([v6, container(3)]);
    h = await startApi(store);
  });
  afterEach(async () => {
    await h.close();
    store.close();
  });

  it('answers one podIPInfo per family, IPv4 first, each with its own subnet and gateway', async () => {
    const a = (await post(h.port, REQ, podRequest(1))).json as IpConfigsBody;
    expect(a.response.ReturnCode).to.equal(0);
    expect(a.podIPInfo).to.deep.equal([
      {
        PodIPConfig: { IPAddress: '10.10.1.1', PrefixLength: 16 },
        NetworkContainerPrimaryIPConfig: {
          IPSubnet: { IPAddress: '10.10.0.4', PrefixLength: 16 },
          DNSServers: [],
          GatewayIPAddress: '10.10.0.1',
        },
      },
      {
        PodIPConfig: { IPAddress: 'fd00:10::a1', PrefixLength: 112 },
        NetworkContainerPrimaryIPConfig: {
          IPSubnet: { IPAddress: 'fd00:10::4', PrefixLength: 112 },
          DNSServers: [],
          GatewayIPAddress: 'fd00:10::1',
        },
      },
    ]);
    expect((await post(h.port, REQ, podRequest(1))).json).to.deep.equal(a);
    const check = (await post(h.port, '/network/ipconfig', { podInterfaceID: 'iface-1' }))
      .json as IpConfigsBody;
    expect(check.podIPInfo).to.deep.equal(a.podIPInfo);
    const attachments = (await post(h.port, '/network/attachments', {})).json as {
      attachments: { podInterfaceID: string; IPAddress: string; IPAddresses: string[] }[];
    };
    expect(attachments.attachments).to.deep.equal([
      {
        podInterfaceID: 'iface-1',
        infraContainerID: 'infra-1',
        podName: 'pod-1',
        podNamespace: 'default',
        IPAddress: '10.10.1.1',
        IPAddresses: ['10.10.1.1', 'fd00:10::a1'],
      },
    ]);
  });

  it('with no IPv6 address left, assigns nothing (code 32, the family named)', async () => {
    await post(h.port, REQ, podRequest(1));
    await post(h.port, REQ, podRequest(2));
    const before = store.list();
    const none = (await post(h.port, REQ, podRequest(3))).json as IpConfigsBody;
    expect(none.response.ReturnCode).to.equal(32);
    expect(none.podIPInfo).to.deep.equal([]);
    expect(none.response.Message).to.match(/no Available IPv6 address to assign/);
    expect(store.list()).to.deep.equal(before);
    expect(store.countsByFamily().map((f) => f.counts.Available)).to.deep.equal([1, 0]);
  });

  it('release frees both; the debug listing shows every address of both families', async () => {
    await post(h.port, REQ, podRequest(1));
    const assigned = await post(h.port, '/debug/ipaddresses', {
      IPConfigStateFilter: ['Assigned'],
    });
    type Listing = { IPConfigurationStatus: { IPAddress: string; NCID: string; State: string }[] };
    expect(
      (assigned.json as Listing).IPConfigurationStatus.map((s) => [s.IPAddress, s.NCID]),
    ).to.deep.equal([
      ['10.10.1.1', 'nc-a'],
      ['fd00:10::a1', 'nc-v6'],
    ]);
    await post(h.port, REL, podRequest(1));
    expect(store.counts()).to.deep.include({ Assigned: 0, Available: 5 });
    const all = (await post(h.port, '/debug/ipaddresses', {})).json as Listing;
    expect(all.IPConfigurationStatus.map((s) => s.IPAddress)).to.deep.equal([
      '10.10.1.1',
      '10.10.1.2',
      '10.10.1.3',
      'fd00:10::a1',
      'fd00:10::a2',
    ]);
  });
});
