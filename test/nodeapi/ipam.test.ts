import { expect } from 'chai';
import { FakeStore } from './fake-store.ts';
import { call, podRequest, post, startApi } from './harness.ts';
import type { Harness } from './harness.ts';

const REQ = '/network/requestipconfigs';
const REL = '/network/releaseipconfigs';
const DBG = '/debug/ipaddresses';

interface IpConfigsBody {
  podIPInfo: { PodIPConfig: { IPAddress: string; PrefixLength: number } }[];
  response: { ReturnCode: number; Message: string };
}

describe('node api: CNS IPAM endpoints', () => {
  let h: Harness;
  let store: FakeStore;
  beforeEach(async () => {
    store = FakeStore.withIps(2);
    h = await startApi(store);
  });
  afterEach(() => h.close());

  it('assigns an Available IP and answers in the CNS shape', async () => {
    const res = await post(h.port, REQ, podRequest(1));
    expect(res.status).to.equal(200);
    const body = res.json as IpConfigsBody;
    expect(body.response).to.deep.equal({ ReturnCode: 0, Message: '' });
    expect(body.podIPInfo).to.have.length(1);
    expect(body.podIPInfo[0]?.PodIPConfig.IPAddress).to.equal('10.240.1.0');
    expect(store.counts().Assigned).to.equal(1);
    expect(h.changes.map((c) => c.kind)).to.deep.equal(['assigned']);
  });

  it('is idempotent per podInterfaceID', async () => {
    const a = (await post(h.port, REQ, podRequest(1))).json as IpConfigsBody;
    const b = (await post(h.port, REQ, podRequest(1))).json as IpConfigsBody;
    expect(b).to.deep.equal(a);
    expect(store.counts().Assigned).to.equal(1);
  });

  it('honours desiredIPAddresses', async () => {
    const res = await post(h.port, REQ, podRequest(1, { desiredIPAddresses: ['10.240.1.1'] }));
    expect((res.json as IpConfigsBody).podIPInfo[0]?.PodIPConfig.IPAddress).to.equal('10.240.1.1');
  });

  it('answers ReturnCode 32 FailedToAllocateIPConfig when no IP is Available', async () => {
    await post(h.port, REQ, podRequest(1));
    await post(h.port, REQ, podRequest(2));
    const before = store.snapshot();
    const res = await post(h.port, REQ, podRequest(3));
    const body = res.json as IpConfigsBody;
    expect(body.response.ReturnCode).to.equal(32);
    expect(body.response.Message).to.match(/default\/pod-3/);
    expect(body.podIPInfo).to.deep.equal([]);
    expect(store.snapshot()).to.deep.equal(before);
    expect(h.logs.find('no available ip')).to.have.length(1);
  });

  it('accepts orchestratorContext marshalled as a JSON string too', async () => {
    const ctx = JSON.stringify({ PodName: 'p', PodNamespace: 'ns' });
    const res = await post(h.port, REQ, podRequest(1, { orchestratorContext: ctx }));
    expect((res.json as IpConfigsBody).response.ReturnCode).to.equal(0);
    expect(store.list(['Assigned'])[0]?.pod?.podName).to.equal('p');
  });

  it('ignores the fields CNS clients send that it has no use for', async () => {
    const res = await post(
      h.port,
      REQ,
      podRequest(1, { ifname: 'eth0', secondaryInterfacesExist: false, desiredIPAddresses: null }),
    );
    expect((res.json as IpConfigsBody).response.ReturnCode).to.equal(0);
  });

  it('release makes the IP Available again and is idempotent', async () => {
    await post(h.port, REQ, podRequest(1));
    const first = await post(h.port, REL, podRequest(1));
    expect(first.status).to.equal(200);
    expect(first.json).to.deep.equal({ podIPInfo: [], response: { ReturnCode: 0, Message: '' } });
    expect(store.counts()).to.include({ Available: 2, Assigned: 0 });
    const again = await post(h.port, REL, podRequest(1));
    expect(again.json).to.deep.equal(first.json);
    expect(h.changes.map((c) => c.kind)).to.deep.equal(['assigned', 'released']);
  });

  it('release of an IP marked PendingRelease keeps it PendingRelease', async () => {
    await post(h.port, REQ, podRequest(1));
    const id = store.list(['Assigned'])[0]?.id as string;
    store.set(id, 'PendingRelease');
    await post(h.port, REL, podRequest(1));
    expect(store.records.get(id)?.state).to.equal('PendingRelease');
  });

  it('/debug/ipaddresses lists IPs filtered by state in the CNS shape', async () => {
    await post(h.port, REQ, podRequest(1));
    const res = await post(h.port, DBG, { IPConfigStateFilter: ['Assigned'] });
    expect(res.status).to.equal(200);
    expect(res.json).to.deep.equal({
      IPConfigurationStatus: [
        {
          ID: 'ip-000',
          IPAddress: '10.240.1.0',
          NCID: 'nc-1',
          State: 'Assigned',
          PodInfo: {
            PodName: 'pod-1',
            PodNamespace: 'default',
            PodInfraContainerID: 'infra-1',
            PodInterfaceID: 'iface-1',
          },
        },
      ],
      Response: { ReturnCode: 0, Message: '' },
    });
    const all = (await post(h.port, DBG, { IPConfigStateFilter: [] })).json as {
      IPConfigurationStatus: { State: string; PodInfo: unknown }[];
    };
    expect(all.IPConfigurationStatus.map((s) => s.State).sort()).to.deep.equal([
      'Assigned',
      'Available',
    ]);
    expect(all.IPConfigurationStatus.find((s) => s.State === 'Available')?.PodInfo).to.equal(null);
  });

  describe('bad input: HTTP 400 and ReturnCode 23, nothing changed', () => {
    const cases: [string, string, RegExp][] = [
      ['not JSON', '{"podInterfaceID": ', /not valid JSON/],
      ['empty', '', /empty/],
      ['an array', '[]', /must be a JSON object/],
      [
        'no podInterfaceID',
        JSON.stringify(podRequest(1, { podInterfaceID: undefined })),
        /podInterfaceID is required/,
      ],
      [
        'numeric podInterfaceID',
        JSON.stringify(podRequest(1, { podInterfaceID: 7 })),
        /podInterfaceID must be a string/,
      ],
      [
        'blank infraContainerID',
        JSON.stringify(podRequest(1, { infraContainerID: '  ' })),
        /infraContainerID must not be empty/,
      ],
      [
        'no orchestratorContext',
        JSON.stringify(podRequest(1, { orchestratorContext: undefined })),
        /orchestratorContext is required/,
      ],
      [
        'orchestratorContext not JSON',
        JSON.stringify(podRequest(1, { orchestratorContext: 'pod-1' })),
        /not JSON/,
      ],
      [
        'no PodName',
        JSON.stringify(podRequest(1, { orchestratorContext: { PodNamespace: 'd' } })),
        /orchestratorContext.PodName is required/,
      ],
      [
        'bad desired IP',
        JSON.stringify(podRequest(1, { desiredIPAddresses: ['10.0.0.300'] })),
        /desiredIPAddresses\[0\] is not an IP/,
      ],
      [
        'desired not an array',
        JSON.stringify(podRequest(1, { desiredIPAddresses: '10.0.0.1' })),
        /must be an array/,
      ],
      [
        'control characters',
        JSON.stringify(podRequest(1, { podInterfaceID: 'a\nb' })),
        /control characters/,
      ],
    ];
    for (const [name, body, msg] of cases) {
      it(`refuses ${name}`, async () => {
        for (const path of [REQ, REL]) {
          const before = store.snapshot();
          const res = await call(h.port, 'POST', path, body);
          expect(res.status, path).to.equal(400);
          const json = res.json as { response: { ReturnCode: number; Message: string } };
          expect(json.response.ReturnCode).to.equal(23);
          expect(json.response.Message).to.match(msg);
          expect(store.snapshot()).to.deep.equal(before);
        }
        expect(h.changes).to.deep.equal([]);
      });
    }

    it('refuses an unknown state in the debug filter', async () => {
      const res = await post(h.port, DBG, { IPConfigStateFilter: ['Bogus'] });
      expect(res.status).to.equal(400);
      expect(res.json).to.have.nested.property('response.ReturnCode', 23);
      expect((res.json as { error: string }).error).to.match(/must be one of Available/);
    });

    it('refuses invalid UTF-8', async () => {
      const res = await call(h.port, 'POST', REQ, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
      expect(res.status).to.equal(400);
      expect((res.json as { error: string }).error).to.match(/UTF-8/);
    });

    it('reads the body as JSON whatever the Content-Type says, as CNS does', async () => {
      const malformed = await call(h.port, 'POST', REQ, '{bad', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(malformed.status).to.equal(400);
      expect(malformed.json).to.have.nested.property('response.ReturnCode', 23);
      expect(store.counts().Assigned).to.equal(0);
      const res = await call(h.port, 'POST', REQ, JSON.stringify(podRequest(1)), {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(res.status).to.equal(200);
      expect(res.json).to.have.nested.property('response.ReturnCode', 0);
      expect(store.counts().Assigned).to.equal(1);
    });

    it('refuses a body over the limit with 413, declared or streamed', async () => {
      const big = JSON.stringify(podRequest(1, { pad: 'x'.repeat(70 * 1024) }));
      const declared = await call(h.port, 'POST', REQ, big);
      expect(declared.status).to.equal(413);
      expect(declared.json).to.have.nested.property('response.ReturnCode', 23);
      const streamed = await call(h.port, 'POST', REQ, big, {
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
      });
      expect(streamed.status).to.equal(413);
      expect(store.counts().Assigned).to.equal(0);
      // The server is still fine afterwards.
      expect((await post(h.port, REQ, podRequest(1))).status).to.equal(200);
    });
  });

  it('a store failure is a 500 with ReturnCode 99 and an error log, and the server lives on', async () => {
    store.assign = () => {
      throw new Error('disk on fire');
    };
    const res = await post(h.port, REQ, podRequest(1));
    expect(res.status).to.equal(500);
    expect(res.json).to.have.nested.property('response.ReturnCode', 99);
    expect(h.logs.find('ipam request failed')[0]?.error).to.equal('disk on fire');
    expect((await call(h.port, 'GET', '/healthz')).status).to.equal(200);
  });

  it("the store's own input refusal (InvalidIpStoreInputError) is a 400 with ReturnCode 23", async () => {
    const before = store.snapshot();
    store.assign = () => {
      const err = new Error('podInterfaceID too long for the store');
      err.name = 'InvalidIpStoreInputError';
      throw err;
    };
    const res = await post(h.port, REQ, podRequest(1));
    expect(res.status).to.equal(400);
    expect(res.json).to.have.nested.property('response.ReturnCode', 23);
    expect(store.snapshot()).to.deep.equal(before);
    expect(h.logs.find('ipam request failed')).to.have.length(0);
  });

  it('an onChange hook that throws is logged and does not fail the request', async () => {
    await h.close();
    h = await startApi(store, {
      onChange: () => {
        throw new Error('hook broke');
      },
    });
    const res = await post(h.port, REQ, podRequest(1));
    expect((res.json as IpConfigsBody).response.ReturnCode).to.equal(0);
    expect(h.logs.find('onChange hook failed')).to.have.length(1);
  });
});
