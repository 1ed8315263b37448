// What versions.ts knows of one named object, against its true history
// (docs/decisions/0036): a seeded model of an API server's object (updates,
// deletions, a new uid under the same name), a watch stream that delivers
// every change in order and sometimes re-lists past some, and answers to
// requests (GETs, writes' answers) that show the state at some moment
// between their request and their answer and arrive in any order. The
// candidates are never ordered by comparing resourceVersions (they are
// random strings here). After every observation:
//   - the newest state received is still a candidate (nothing newer than
//     what was pruned is lost: its addresses stay held);
//   - a point marked moved is truly left behind by the object;
// and once the stream has caught up and a last read comes back, the only
// candidate is the current state.
import { expect } from 'chai';
import fc from 'fast-check';
import { nextSeq, Versions } from '../../src/fulfiller/versions.ts';
import type { MovePoint } from '../../src/fulfiller/versions.ts';

interface State {
  /** Its place in the true history. */
  at: number;
  uid: string;
  rv: string;
  deleted: boolean;
}

interface Obj {
  metadata: { uid: string; resourceVersion: string };
}

type Op =
  | { op: 'update' }
  | { op: 'delete' }
  | { op: 'stream' }
  | { op: 'relist' }
  | { op: 'send' }
  | { op: 'answer'; pick: number; lag: number }
  | { op: 'point'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ op: 'update' } as Op) },
  { weight: 1, arbitrary: fc.constant({ op: 'delete' } as Op) },
  { weight: 4, arbitrary: fc.constant({ op: 'stream' } as Op) },
  { weight: 1, arbitrary: fc.constant({ op: 'relist' } as Op) },
  { weight: 3, arbitrary: fc.constant({ op: 'send' } as Op) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('answer' as const), pick: fc.nat(), lag: fc.nat() }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('point' as const), pick: fc.nat() }) },
);

function run(ops: Op[], seed: number): void {
  let n = seed;
  const fresh = (): string => `v${(n = (n * 1103515245 + 12345) % 2 ** 31).toString(36)}`;
  const history: State[] = [{ at: 0, uid: 'u0', rv: fresh(), deleted: false }];
  const now = (): State => history[history.length - 1]!;
  const versions = new Versions<Obj>();
  let streamAt = 0; // the last history entry the stream delivered
  const pending: Array<{ sent: number; from: number }> = [];
  const received: State[] = [];
  const points: Array<{ point: MovePoint; state: State }> = [];
  let uids = 0;
  const obj = (s: State): Obj => ({ metadata: { uid: s.uid, resourceVersion: s.rv } });

  const check = (): void => {
    const newest = received.reduce<State | undefined>(
      (a, s) => (a === undefined || s.at > a.at ? s : a),
      undefined,
    );
    if (newest && !newest.deleted) {
      const kept = versions
        .all()
        .some((o) => o.metadata.uid === newest.uid && o.metadata.resourceVersion === newest.rv);
      expect(
        kept,
        `the newest state received (${newest.uid}/${newest.rv} at ${newest.at}) is a candidate`,
      ).to.equal(true);
    }
    for (const { point, state } of points)
      if (point.moved)
        expect(now().at > state.at, `${state.uid}/${state.rv} marked moved while current`).to.equal(
          true,
        );
  };
  const see = (s: State, how: 'stream' | 'read' | 'relist', sent?: number): void => {
    if (s.deleted) {
      if (how === 'stream') versions.deleted(s.uid);
      else versions.supersede(sent!);
    } else if (how === 'stream') versions.observe(obj(s), { from: 'stream' });
    else if (how === 'relist') versions.relisted(obj(s), sent!);
    else versions.observe(obj(s), { from: 'read', sent: sent! });
    received.push(s);
    check();
  };

  for (const o of ops) {
    switch (o.op) {
      case 'update':
        if (now().deleted)
          history.push({ at: history.length, uid: `u${++uids}`, rv: fresh(), deleted: false });
        else history.push({ at: history.length, uid: now().uid, rv: fresh(), deleted: false });
        break;
      case 'delete':
        if (!now().deleted)
          history.push({ at: history.length, uid: now().uid, rv: fresh(), deleted: true });
        break;
      case 'stream':
        if (streamAt < history.length - 1) see(history[++streamAt]!, 'stream');
        break;
      case 'relist': {
        const sent = nextSeq();
        streamAt = history.length - 1;
        see(now(), 'relist', sent);
        break;
      }
      case 'send':
        pending.push({ sent: nextSeq(), from: history.length - 1 });
        break;
      case 'answer': {
        if (pending.length === 0) break;
        const [r] = pending.splice(o.pick % pending.length, 1);
        // Served at some moment between its request and now.
        const at = r!.from + (o.lag % (history.length - r!.from));
        see(history[at]!, 'read', r!.sent);
        break;
      }
      case 'point': {
        const known = versions.all();
        if (known.length === 0) break;
        const pick = known[o.pick % known.length]!;
        const state = history.find(
          (s) => s.uid === pick.metadata.uid && s.rv === pick.metadata.resourceVersion,
        )!;
        points.push({
          point: versions.track(state.uid, state.rv, versions.latestReceived()),
          state,
        });
        break;
      }
    }
  }
  // Quiet: every answer comes back, the stream catches up, one last read.
  while (pending.length > 0) {
    const r = pending.shift()!;
    see(history[history.length - 1]!, 'read', r.sent);
  }
  while (streamAt < history.length - 1) see(history[++streamAt]!, 'stream');
  see(now(), 'read', nextSeq());
  const left = versions.all().map((o) => `${o.metadata.uid}/${o.metadata.resourceVersion}`);
  expect(left).to.deep.equal(now().deleted ? [] : [`${now().uid}/${now().rv}`]);
}

describe('versions: what is known of an object, ordered without comparing resourceVersions', () => {
  it('property: the newest state received stays a candidate, a moved point is truly behind, and it converges', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 1e6 }),
        (ops, seed) => run(ops, seed),
      ),
      { numRuns: Number(process.env.VERSIONS_RUNS ?? 2000) },
    );
  });

  it('an answer older than what the stream delivered since is no candidate', () => {
    const v = new Versions<Obj>();
    const at = (rv: string): Obj => ({ metadata: { uid: 'u', resourceVersion: rv } });
    const sent = nextSeq();
    v.observe(at('a'), { from: 'stream' });
    v.observe(at('b'), { from: 'stream' });
    expect(v.observe(at('a'), { from: 'read', sent })).to.equal(false);
    expect(v.all().map((o) => o.metadata.resourceVersion)).to.deep.equal(['b']);
  });

  it('an answer ahead of a lagging stream is held beside it until the stream reaches it', () => {
    const v = new Versions<Obj>();
    const at = (rv: string): Obj => ({ metadata: { uid: 'u', resourceVersion: rv } });
    v.observe(at('a'), { from: 'stream' });
    v.observe(at('c'), { from: 'read', sent: nextSeq() });
    v.observe(at('b'), { from: 'stream' }); // older than c, but the stream cannot say so yet
    expect(
      v
        .all()
        .map((o) => o.metadata.resourceVersion)
        .sort(),
    ).to.deep.equal(['b', 'c']);
    expect(v.latest()!.metadata.resourceVersion).to.equal('b');
    v.observe(at('c'), { from: 'stream' });
    expect(v.all().map((o) => o.metadata.resourceVersion)).to.deep.equal(['c']);
  });
});
