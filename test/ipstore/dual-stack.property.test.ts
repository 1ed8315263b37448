// Property test of a dual-stack pool: no half pod, ever. Random sequences of
// syncs (either family's container dropped, filled or emptied), CNI
// requests and releases, reclaims, marks and restores against the real
// store. After every step:
// - a pod interface holds exactly the families it was given when its
//   request was answered (one address of each family the pool had then),
//   until it is released or reclaimed, when it holds none;
// - a refused request (ReturnCode 32: either family had none free) changed
//   nothing;
// - a mark took from each family what familyMarks says: the same number of
//   each when the families are level, only the surplus of a family ahead;
// - checkStoreInvariants finds nothing.
import { expect } from 'chai';
import fc from 'fast-check';
import { familyMarks } from '../../src/ipstore/pending-release.ts';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { openIpStore, type SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import {
  DesiredIpUnavailableError,
  InsufficientReleasableError,
  NoAvailableIpError,
  type IpRecord,
} from '../../src/ipstore/types.ts';
import { addressFamily, type IpFamily } from '../../src/nnc/family.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { container, container6, ip6, pod, tickingClock } from './helpers.ts';

const HOSTS = [2, 3, 4, 5, 6];
const PODS = [1, 2, 3, 4, 5, 6];

type Command =
  | { kind: 'sync'; v4: boolean[] | null; v6: boolean[] | null; programming: boolean }
  | { kind: 'assign'; pod: number; desired: string | null }
  | { kind: 'release'; pod: number }
  | { kind: 'reclaim'; pod: number; second: boolean }
  | { kind: 'mark'; count: number }
  | { kind: 'restore'; take: number }
  | { kind: 'programmed' };

const present = fc.option(
  fc.array(fc.boolean(), { minLength: HOSTS.length, maxLength: HOSTS.length }),
  { freq: 5 },
);
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('sync' as const),
    v4: present,
    v6: present,
    programming: fc.boolean(),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('assign' as const),
      pod: fc.constantFrom(...PODS),
      desired: fc.option(
        fc.constantFrom(...HOSTS.map((h) => `10.1.0.${h}`), ...HOSTS.map((h) => ip6(1, h))),
        { freq: 4 },
      ),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('release' as const), pod: fc.constantFrom(...PODS) }),
    weight: 2,
  },
  fc.record({
    kind: fc.constant('reclaim' as const),
    pod: fc.constantFrom(...PODS),
    second: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('mark' as const), count: fc.nat(3) }),
  fc.record({ kind: fc.constant('restore' as const), take: fc.nat(4) }),
  fc.constant({ kind: 'programmed' as const }),
);

function containersOf(c: Extract<Command, { kind: 'sync' }>): NetworkContainer[] {
  const hosts = (mask: boolean[]): number[] => HOSTS.filter((_, i) => mask[i]);
  const out: NetworkContainer[] = [];
  if (c.v6 !== null) out.push(container6(1, hosts(c.v6)));
  if (c.v4 !== null) out.push(container(1, hosts(c.v4)));
  return out;
}

const familiesOf = (records: readonly IpRecord[]): IpFamily[] =>
  records.map((r) => addressFamily(r.ip) as IpFamily).sort();

/** What each family holds that counts as active (poolView's figures), IPv4 then IPv6. */
function activeByFamily(records: readonly IpRecord[]): { family: IpFamily; active: number }[] {
  const out: { family: IpFamily; active: number }[] = [];
  for (const family of [4, 6] as const) {
    const of = records.filter((r) => addressFamily(r.ip) === family);
    if (of.length === 0) continue;
    const active = of.filter(
      (r) =>
        r.state === 'Available' ||
        r.state === 'PendingProgramming' ||
        (r.state === 'Assigned' && r.vanished !== true),
    ).length;
    out.push({ family, active });
  }
  return out;
}

function run(store: SqliteIpStore, commands: Command[]): void {
  // The families each pod interface was given, and the pool's families now.
  const given = new Map<string, IpFamily[]>();
  let families: IpFamily[] = [];
  commands.forEach((c, step) => {
    const at = `step ${step}: ${JSON.stringify(c)}`;
    const before = store.list();
    if (c.kind === 'sync') {
      const containers = containersOf(c);
      store.syncInventory(containers, {
        newIpState: c.programming ? 'PendingProgramming' : 'Available',
      });
      families = [...new Set(containers.map((nc) => (nc.id.startsWith('nc6') ? 6 : 4)))].sort();
    } else if (c.kind === 'assign') {
      const request = pod(c.pod, c.desired === null ? undefined : [c.desired]);
      const held = given.get(request.podInterfaceID);
      try {
        const got = store.assign(request);
        if (held === undefined) {
          expect(familiesOf(got.ips), at).to.deep.equal(families);
          given.set(request.podInterfaceID, familiesOf(got.ips));
        } else expect(familiesOf(got.ips), at).to.deep.equal(held);
      } catch (err) {
        if (!(err instanceof NoAvailableIpError)) throw err;
        if (!(err instanceof DesiredIpUnavailableError))
          expect(held, `${at}: refused while holding`).to.equal(undefined);
        expect(store.list(), `${at}: a refusal changed nothing`).to.deep.equal(before);
      }
    } else if (c.kind === 'release') {
      store.release(pod(c.pod).podInterfaceID);
      given.delete(pod(c.pod).podInterfaceID);
    } else if (c.kind === 'reclaim') {
      const id = pod(c.pod).podInterfaceID;
      const mine = before.filter((r) => r.pod?.podInterfaceID === id);
      const record = mine[c.second ? mine.length - 1 : 0];
      if (record?.pod !== undefined) {
        expect(store.reclaim(record.id, record.pod), at).to.not.equal(undefined);
        given.delete(id);
      }
    } else if (c.kind === 'mark') {
      const figures = activeByFamily(before);
      try {
        const marked = new Set(store.markPendingRelease(c.count));
        const took = figures.map(
          (f) => before.filter((r) => marked.has(r.id) && addressFamily(r.ip) === f.family).length,
        );
        expect(took, at).to.deep.equal(familyMarks(figures, c.count));
      } catch (err) {
        if (!(err instanceof InsufficientReleasableError)) throw err;
        expect(store.list(), `${at}: a refused mark changed nothing`).to.deep.equal(before);
      }
    } else if (c.kind === 'restore') {
      const ids = before.filter((r) => r.state !== 'Assigned').map((r) => r.id);
      store.restorePendingRelease(ids.slice(0, c.take));
    } else store.markProgrammed();

    for (const [id, f] of given) {
      const held = store.list(['Assigned']).filter((r) => r.pod?.podInterfaceID === id);
      expect(familiesOf(held), `${at}: ${id} holds what it was given`).to.deep.equal(f);
    }
    const strays = store.list(['Assigned']).filter((r) => !given.has(r.pod?.podInterfaceID ?? ''));
    expect(strays, `${at}: assigned to a pod interface never answered`).to.deep.equal([]);
    expect(checkStoreInvariants(store), at).to.deep.equal([]);
  });
}

describe('ipstore: dual-stack, no half pod (property)', () => {
  it('holds over random syncs, requests, releases, reclaims and marks', () => {
    fc.assert(
      fc.property(fc.array(commandArb, { minLength: 1, maxLength: 40 }), (commands) => {
        const store = openIpStore({ memory: true, now: tickingClock() });
        try {
          run(store, commands);
        } finally {
          store.close();
        }
      }),
      { numRuns: 300 },
    );
  });
});
