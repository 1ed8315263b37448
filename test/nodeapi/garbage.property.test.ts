// Property tests: whatever a client sends that is not a valid request, the
// store is left exactly as it was and the answer is a 4xx with a JSON body
// carrying a CNS response. Runs over real HTTP on loopback.
import { expect } from 'chai';
import fc from 'fast-check';
import { parseIpConfigsRequest } from '../../src/nodeapi/validate.ts';
import { FakeStore } from './fake-store.ts';
import { call, podRequest, startApi } from './harness.ts';
import type { Harness } from './harness.ts';

const IPAM = ['/network/requestipconfigs', '/network/releaseipconfigs'];

/** A valid request with one field replaced by something of the wrong kind. */
const brokenRequest = fc
  .record({
    field: fc.constantFrom(
      'podInterfaceID',
      'infraContainerID',
      'orchestratorContext',
      'desiredIPAddresses',
      'PodName',
      'PodNamespace',
    ),
    bad: fc.oneof(
      fc.integer(),
      fc.boolean(),
      fc.constant(''),
      fc.constant('   '),
      fc.array(fc.integer(), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
      fc.string({ minLength: 300, maxLength: 400 }),
      fc.constant('not-an-ip'),
    ),
  })
  .map(({ field, bad }) => {
    const body = podRequest(1) as Record<string, unknown>;
    if (field === 'PodName' || field === 'PodNamespace') {
      body.orchestratorContext = { PodName: 'p', PodNamespace: 'n', [field]: bad };
    } else if (field === 'desiredIPAddresses') {
      body.desiredIPAddresses = Array.isArray(bad) ? bad : [bad];
    } else {
      body[field] = bad;
    }
    return JSON.stringify(body);
  })
  .filter((text) => !parseIpConfigsRequest(JSON.parse(text)).ok);

/** Anything at all: random text, random JSON, truncated valid requests. */
const garbage = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc
    .integer({ min: 0, max: JSON.stringify(podRequest(1)).length - 1 })
    .map((n) => JSON.stringify(podRequest(1)).slice(0, n)),
  fc.anything({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'undefined'),
);

function invalid(text: string): boolean {
  try {
    return !parseIpConfigsRequest(JSON.parse(text)).ok;
  } catch {
    return true;
  }
}

describe('node api: garbage never changes state (fast-check)', () => {
  let h: Harness;
  let store: FakeStore;
  before(async () => {
    store = FakeStore.withIps(3);
    h = await startApi(store);
    // One IP held, so a bad release has something it could wrongly free.
    const res = await call(h.port, 'POST', IPAM[0] as string, JSON.stringify(podRequest(1)));
    expect(res.status).to.equal(200);
  });
  after(() => h.close());

  const check = async (path: string, body: string): Promise<void> => {
    const before = store.snapshot();
    const res = await call(h.port, 'POST', path, body);
    expect(res.status, body).to.be.within(400, 499);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.json).to.have.nested.property('response.ReturnCode', 23);
    expect(store.snapshot()).to.deep.equal(before);
  };

  it('IPAM endpoints: a valid request with one broken field', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...IPAM), brokenRequest, check), {
      numRuns: 150,
    });
  });

  it('IPAM endpoints: random text and JSON', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...IPAM), garbage.filter(invalid), check), {
      numRuns: 200,
    });
  });

  it('/debug/ipaddresses: anything but a list of known states is refused, nothing changes', async () => {
    const filter = fc.oneof(
      garbage,
      fc
        .array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 4 })
        .map((states) => JSON.stringify({ IPConfigStateFilter: states })),
    );
    await fc.assert(
      fc.asyncProperty(filter, async (body) => {
        const before = store.snapshot();
        const res = await call(h.port, 'POST', '/debug/ipaddresses', body);
        expect([200, 400]).to.include(res.status);
        expect(res.json).to.be.an('object');
        if (res.status === 400) expect(res.json).to.have.nested.property('response.ReturnCode', 23);
        expect(store.snapshot()).to.deep.equal(before);
      }),
      { numRuns: 150 },
    );
  });

  it('random methods and paths get a JSON 404/405, never a crash', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
        fc.oneof(
          fc.constantFrom('/healthz', '/readyz', '/metrics', '/debug/pool', ...IPAM),
          fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
        ),
        async (method, path) => {
          const before = store.snapshot();
          const res = await call(h.port, method, path, method === 'GET' ? undefined : '{}');
          expect(res.status).to.be.within(200, 503);
          if (res.status === 404 || res.status === 405) {
            expect(res.json).to.have.nested.property('response.ReturnCode');
          }
          expect(store.snapshot()).to.deep.equal(before);
        },
      ),
      { numRuns: 150 },
    );
    expect((await call(h.port, 'GET', '/healthz')).status).to.equal(200);
  });
});
