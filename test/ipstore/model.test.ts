// Property test: random sequences of sync / assign / release / mark / restore /
// programmed against a small reference model. Where the store may choose (which
// IP to hand out or mark), the model checks the choice is allowed and then
// follows it. After every step the store must equal the model and
// checkStoreInvariants must find nothing.
import { expect } from 'chai';
import fc from 'fast-check';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { IpState } from '../../src/ipstore/types.ts';
import {
  DesiredIpUnavailableError,
  InsufficientReleasableError,
  NoAvailableIpError,
} from '../../src/ipstore/types.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { container, ipId, pod, tickingClock } from './helpers.ts';

const NCS = [1, 2];
const HOSTS = [2, 3, 4, 5, 6, 7];
const UNIVERSE = NCS.flatMap((nc) => HOSTS.map((host) => ({ nc, host, id: ipId(nc, host) })));
const PODS = [0, 1, 2, 3, 4, 5, 6];

type Command =
  | { kind: 'sync'; present: boolean[]; programming: boolean }
  | { kind: 'assign'; pod: number; desired: number | null }
  | { kind: 'release'; pod: number }
  | { kind: 'mark'; count: number }
  | { kind: 'restore'; ids: number[]; unknown: boolean }
  | { kind: 'programmed' };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('sync' as const),
    present: fc.array(fc.boolean(), { minLength: UNIVERSE.length, maxLength: UNIVERSE.length }),
    programming: fc.boolean(),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('assign' as const),
      pod: fc.constantFrom(...PODS),
      desired: fc.option(fc.nat(UNIVERSE.length)),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('release' as const), pod: fc.constantFrom(...PODS) }),
    weight: 2,
  },
  fc.record({ kind: fc.constant('mark' as const), count: fc.nat(6) }),
  fc.record({
    kind: fc.constant('restore' as const),
    ids: fc.uniqueArray(fc.nat(UNIVERSE.length - 1), { maxLength: 5 }),
    unknown: fc.boolean(),
  }),
  fc.constant({ kind: 'programmed' as const }),
);

interface ModelIp {
  ip: string;
  nc: string;
  state: IpState;
  pod?: string;
  vanished: boolean;
}

function ipOf(index: number): { id: string; ip: string; nc: string } {
  const u = UNIVERSE[index];
  if (u === undefined) return { id: 'nowhere', ip: '10.9.9.9', nc: 'nc-9' };
  return { id: u.id, ip: `10.${u.nc}.0.${u.host}`, nc: `nc-${u.nc}` };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

function run(commands: Command[]): void {
  const store: SqliteIpStore = openIpStore({ memory: true, now: tickingClock() });
  const model = new Map<string, ModelIp>();
  let backing: NetworkContainer[] = [];
  const heldBy = (podIf: string) => [...model].find(([, m]) => m.pod === podIf);
  try {
    for (const [step, c] of commands.entries()) {
      const at = `step ${step} ${JSON.stringify(c)}`;
      switch (c.kind) {
        case 'sync': {
          backing = NCS.map((nc) =>
            container(
              nc,
              HOSTS.filter((h, i) => c.present[(nc - 1) * HOSTS.length + i]),
            ),
          );
          const wanted = new Set(UNIVERSE.filter((_, i) => c.present[i]).map((u) => u.id));
          const change = store.syncInventory(backing, {
            newIpState: c.programming ? 'PendingProgramming' : 'Available',
          });
          const removed: string[] = [];
          const vanished: string[] = [];
          const added: string[] = [];
          for (const [id, m] of [...model]) {
            if (wanted.has(id)) continue;
            if (m.state === 'Assigned') {
              if (!m.vanished) vanished.push(id);
              m.vanished = true;
            } else {
              model.delete(id);
              removed.push(id);
            }
          }
          UNIVERSE.forEach((u, i) => {
            if (!wanted.has(u.id)) return;
            const m = model.get(u.id);
            if (m !== undefined) m.vanished = false;
            else {
              const { ip, nc } = ipOf(i);
              model.set(u.id, {
                ip,
                nc,
                state: c.programming ? 'PendingProgramming' : 'Available',
                vanished: false,
              });
              added.push(u.id);
            }
          });
          expect(change.added.map((r) => r.id).sort(), at).to.deep.equal(added.sort());
          expect(change.removed.map((r) => r.id).sort(), at).to.deep.equal(removed.sort());
          expect(change.assignedVanished.map((r) => r.id).sort(), at).to.deep.equal(
            vanished.sort(),
          );
          expect(change.conflicts ?? [], at).to.deep.equal([]);
          break;
        }
        case 'assign': {
          const request = pod(c.pod, c.desired === null ? undefined : [ipOf(c.desired).ip]);
          const held = heldBy(request.podInterfaceID);
          const desiredId = c.desired === null ? undefined : ipOf(c.desired).id;
          if (held !== undefined) {
            if (desiredId !== undefined && desiredId !== held[0]) {
              expect(
                thrown(() => store.assign(request)),
                at,
              ).to.be.instanceOf(DesiredIpUnavailableError);
            } else {
              expect(store.assign(request).id, at).to.equal(held[0]);
            }
          } else if (desiredId !== undefined) {
            if (model.get(desiredId)?.state === 'Available') {
              expect(store.assign(request).id, at).to.equal(desiredId);
              Object.assign(model.get(desiredId) ?? {}, {
                state: 'Assigned',
                pod: request.podInterfaceID,
              });
            } else {
              expect(
                thrown(() => store.assign(request)),
                at,
              ).to.be.instanceOf(DesiredIpUnavailableError);
            }
          } else {
            const available = [...model]
              .filter(([, m]) => m.state === 'Available')
              .map(([id]) => id);
            if (available.length === 0) {
              expect(
                thrown(() => store.assign(request)),
                at,
              ).to.be.instanceOf(NoAvailableIpError);
            } else {
              const got = store.assign(request);
              expect(available, at).to.include(got.id);
              Object.assign(model.get(got.id) ?? {}, {
                state: 'Assigned',
                pod: request.podInterfaceID,
              });
            }
          }
          break;
        }
        case 'release': {
          const podIf = pod(c.pod).podInterfaceID;
          const held = heldBy(podIf);
          const got = store.release(podIf);
          expect(got?.id, at).to.equal(held?.[0]);
          if (held !== undefined) {
            const [id, m] = held;
            if (m.vanished) model.delete(id);
            else Object.assign(m, { state: 'Available', pod: undefined });
          }
          break;
        }
        case 'mark': {
          const pp = [...model]
            .filter(([, m]) => m.state === 'PendingProgramming')
            .map(([id]) => id);
          const av = [...model].filter(([, m]) => m.state === 'Available').map(([id]) => id);
          if (c.count > pp.length + av.length) {
            const error = thrown(() => store.markPendingRelease(c.count));
            expect(error, at).to.be.instanceOf(InsufficientReleasableError);
            expect((error as InsufficientReleasableError).releasable, at).to.equal(
              pp.length + av.length,
            );
          } else {
            const got = store.markPendingRelease(c.count);
            expect(new Set(got).size, at).to.equal(c.count);
            const fromPp = got.filter((id) => pp.includes(id));
            expect(fromPp.length, at).to.equal(Math.min(c.count, pp.length));
            for (const id of got) {
              expect([...pp, ...av], at).to.include(id);
              Object.assign(model.get(id) ?? {}, { state: 'PendingRelease' });
            }
          }
          break;
        }
        case 'restore': {
          const ids = c.ids.map((i) => ipOf(i).id).concat(c.unknown ? ['unknown-id'] : []);
          const expected = {
            restored: [] as string[],
            unmarked: [] as string[],
            assigned: [] as string[],
            unknown: [] as string[],
          };
          for (const [id, m] of model) {
            if (m.state === 'PendingRelease' && !ids.includes(id)) {
              m.state = 'Available';
              expected.unmarked.push(id);
            }
          }
          for (const id of ids) {
            const m = model.get(id);
            if (m === undefined) expected.unknown.push(id);
            else if (m.state === 'Assigned') expected.assigned.push(id);
            else {
              m.state = 'PendingRelease';
              expected.restored.push(id);
            }
          }
          for (const list of Object.values(expected)) list.sort();
          expect(store.restorePendingRelease(ids), at).to.deep.equal(expected);
          break;
        }
        case 'programmed': {
          const pp = [...model]
            .filter(([, m]) => m.state === 'PendingProgramming')
            .map(([id]) => id);
          expect(store.markProgrammed(), at).to.deep.equal(pp.sort());
          for (const id of pp) Object.assign(model.get(id) ?? {}, { state: 'Available' });
          break;
        }
      }
      const actual = store.list().map((r) => ({
        id: r.id,
        ip: r.ip,
        nc: r.ncId,
        state: r.state,
        pod: r.pod?.podInterfaceID,
        vanished: r.vanished === true,
      }));
      const expected = [...model]
        .map(([id, m]) => ({
          id,
          ip: m.ip,
          nc: m.nc,
          state: m.state,
          pod: m.pod,
          vanished: m.vanished,
        }))
        .sort(
          (a, b) => actual.findIndex((x) => x.id === a.id) - actual.findIndex((x) => x.id === b.id),
        );
      expect(actual, at).to.deep.equal(expected);
      expect(checkStoreInvariants(store, { backing }), at).to.deep.equal([]);
    }
  } finally {
    store.close();
  }
}

describe('ipstore/model (fast-check)', () => {
  it('random operation sequences match the reference model and keep every invariant', () => {
    fc.assert(
      fc.property(fc.array(commandArb, { minLength: 10, maxLength: 60, size: 'max' }), (commands) =>
        run(commands),
      ),
      { numRuns: 200 },
    );
  });

  it('the checker can fail: it reports a broken store', () => {
    const store = openIpStore({ memory: true });
    store.syncInventory([container(1, [2, 3])]);
    store.assign(pod(1));
    // a lying wrapper: counts and pending ids that disagree with list()
    const liar = Object.create(store) as SqliteIpStore;
    liar.counts = () => ({ Available: 5, Assigned: 0, PendingRelease: 0, PendingProgramming: 0 });
    liar.pendingReleaseIds = () => ['ghost'];
    const problems = checkStoreInvariants(liar, { backing: [container(1, [3, 4])] });
    expect(problems.join('\n')).to.match(/counts\(\) says 5/);
    expect(problems.join('\n')).to.match(/pendingReleaseIds/);
    expect(problems.join('\n')).to.match(/not backed by the NNC and not flagged vanished/);
    expect(problems.join('\n')).to.match(/ip-1-4 .* missing from the store/);
    store.close();
  });
});
