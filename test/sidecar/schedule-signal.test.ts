// The schedule signal: the pure decision (capacity, what is wanted, the
// hysteresis, the taint list and its patch) and the loop on a virtual
// clock with a fake Node: a flapping pool changes the signal at most once
// a minute, readiness is never held, failures back off.
import { expect } from 'chai';
import type { StateCounts } from '../../src/ipstore/types.ts';
import type { Clock } from '../../src/clock/clock.ts';
import { silentLogger } from '../../src/log/logger.ts';
import {
  nodeTaints,
  type NodeCalls,
  type NodeTaints,
} from '../../src/sidecar/schedule-signal-node.ts';
import {
  ScheduleSignalLoop,
  type SignalObservation,
} from '../../src/sidecar/schedule-signal-run.ts';
import {
  afterChange,
  afterRead,
  capacityOf,
  decideSignal,
  HOLD_MS,
  initialSignalState,
  TAINT_KEY,
  taintPatch,
  taintsWith,
  wantOf,
  type SignalReason,
  type Taint,
  type Want,
} from '../../src/sidecar/schedule-signal.ts';

const counts = (c: Partial<StateCounts>): StateCounts => ({
  Available: 0,
  Assigned: 0,
  PendingRelease: 0,
  PendingProgramming: 0,
  ...c,
});
const usable = { kind: 'usable' } as const;
const figures = (demand: number, c: Partial<StateCounts>, exhausted = false, max = 250) =>
  capacityOf({ demand, exhausted, max, counts: counts(c) });

/** A virtual clock: timers run in time order as it advances, microtasks in between. */
class VirtualClock implements Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'> {
  t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private id = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): number {
    const id = ++this.id;
    this.timers.push({ at: this.t + Math.max(0, ms), fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await new Promise<void>((r) => setImmediate(r));
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
    await new Promise<void>((r) => setImmediate(r));
  }
}

/** A Node whose taint is what was last written; failures on demand. */
function fakeNode(initial?: Taint): NodeTaints & { writes: (string | undefined)[]; fail: number } {
  let taint = initial;
  const node = {
    writes: [] as (string | undefined)[],
    fail: 0,
    read: () => Promise.resolve(taint),
    write(reason: SignalReason | undefined) {
      if (node.fail > 0) {
        node.fail -= 1;
        return Promise.reject(Object.assign(new Error('boom'), { statusCode: 500 }));
      }
      node.writes.push(reason);
      taint =
        reason === undefined ? undefined : { key: TAINT_KEY, value: reason, effect: 'NoSchedule' };
      return Promise.resolve(taint);
    },
  };
  return node;
}

describe('sidecar/schedule-signal: the decision', () => {
  it('a node can serve with a free address not promised to a waiting pod, or room to grow', () => {
    expect(figures(3, { Available: 1, Assigned: 3 }, true).canServe).to.equal(true);
    // Two pods bound here and not yet served take the two free addresses.
    expect(figures(5, { Available: 2, Assigned: 3 }, true)).to.deep.include({
      free: 2,
      waiting: 2,
      headroom: 0,
      canGrow: false,
      canServe: false,
    });
    // Not exhausted and under its cap: the pool grows, the pod waits a moment only.
    expect(figures(5, { Assigned: 5 }, false, 30).canServe).to.equal(true);
    // At its cap: no growth, exhausted or not.
    expect(figures(30, { Assigned: 30 }, false, 30).canServe).to.equal(false);
    // PendingProgramming addresses are free soon.
    expect(figures(3, { Assigned: 3, PendingProgramming: 1 }, true).canServe).to.equal(true);
  });

  it('wants the taint for a pool not usable yet, exhausted or at its cap; nothing while unknown', () => {
    expect(wantOf({ kind: 'unknown', why: 'listing' }, undefined).kind).to.equal('unknown');
    expect(wantOf({ kind: 'not-usable', why: 'no NNC' }, undefined)).to.deep.equal({
      kind: 'taint',
      reason: 'not-ready',
      why: 'no NNC',
    });
    expect(wantOf(usable, figures(4, { Assigned: 4 }, true))).to.deep.include({
      kind: 'taint',
      reason: 'subnet-exhausted',
    });
    expect(wantOf(usable, figures(16, { Assigned: 16 }, true, 16))).to.deep.include({
      kind: 'taint',
      reason: 'max-ip-count',
    });
    expect(wantOf(usable, figures(4, { Assigned: 4, Available: 1 }, true)).kind).to.equal('clear');
  });

  it('a dual-stack node serves only when every family can: the family that serves least speaks', () => {
    const dual = (
      v4: Partial<StateCounts>,
      v6: Partial<StateCounts>,
      v6Exhausted: boolean,
      demand = 4,
      max = 250,
    ) =>
      capacityOf({
        demand,
        exhausted: v6Exhausted,
        max,
        counts: counts({}),
        families: [
          { name: 'IPv4', counts: counts(v4), exhausted: false },
          { name: 'IPv6', counts: counts(v6), exhausted: v6Exhausted },
        ],
      });
    // IPv4 has free addresses, IPv6's subnet is dry and none is free: no pod can be served.
    const dry = dual({ Assigned: 4, Available: 3 }, { Assigned: 4 }, true);
    expect(dry).to.deep.include({ family: 'IPv6', free: 0, canGrow: false, canServe: false });
    expect(wantOf(usable, dry)).to.deep.equal({
      kind: 'taint',
      reason: 'subnet-exhausted',
      why: 'no free address and the IPv6 subnet is exhausted (IPv6: 0 free, 0 pod(s) waiting, 4/250 addresses)',
    });
    // One IPv6 address free: the node serves (IPv4 has one too).
    expect(
      dual({ Assigned: 4, Available: 3 }, { Assigned: 4, Available: 1 }, true).canServe,
    ).to.equal(true);
    // IPv6 not exhausted: it grows, the node serves even with none free now.
    expect(dual({ Assigned: 4, Available: 3 }, { Assigned: 4 }, false)).to.deep.include({
      family: 'IPv6',
      canServe: true,
    });
    // IPv4 at its cap with nothing free: max-ip-count, whatever IPv6 has.
    const capped = dual({ Assigned: 16 }, { Assigned: 16, Available: 2 }, false, 16, 16);
    expect(wantOf(usable, capped)).to.deep.include({ kind: 'taint', reason: 'max-ip-count' });
    // One family (IPv6-only): judged as before, without naming it.
    const only = capacityOf({
      demand: 2,
      exhausted: true,
      max: 250,
      counts: counts({}),
      families: [{ name: 'IPv6', counts: counts({ Assigned: 2 }), exhausted: true }],
    });
    expect(only).to.not.have.property('family');
    expect(only.canServe).to.equal(false);
  });

  it('reads the Node first, then changes at once unless a capacity change is younger than the hold', () => {
    const taint: Want = { kind: 'taint', reason: 'subnet-exhausted', why: 'dry' };
    const clear: Want = { kind: 'clear', why: 'room' };
    let s = initialSignalState();
    expect(decideSignal(s, taint, 0).kind).to.equal('read');
    expect(decideSignal(s, { kind: 'unknown', why: 'x' }, 0).kind).to.equal('none');
    s = afterRead(s, undefined);
    const set = decideSignal(s, taint, 1000);
    expect(set).to.deep.include({ kind: 'change', capacity: true });
    s = afterChange(s, set as Extract<typeof set, { kind: 'change' }>);
    expect(s).to.deep.include({
      tainted: true,
      reason: 'subnet-exhausted',
      capacityChangeAt: 1000,
    });
    expect(decideSignal(s, clear, 30_000)).to.deep.equal({
      kind: 'hold',
      until: 1000 + HOLD_MS,
      want: clear,
    });
    expect(decideSignal(s, clear, 61_000)).to.deep.include({ kind: 'change', capacity: true });
  });

  it('never holds readiness: a new node is tainted at once and cleared once its pool is usable', () => {
    let s = afterRead(initialSignalState(), undefined);
    const notReady: Want = { kind: 'taint', reason: 'not-ready', why: 'no NNC' };
    const set = decideSignal(s, notReady, 0) as Extract<
      ReturnType<typeof decideSignal>,
      { kind: 'change' }
    >;
    expect(set).to.deep.include({ kind: 'change', capacity: false });
    s = afterChange(s, set);
    const ready = decideSignal(s, { kind: 'clear', why: 'room' }, 500);
    expect(ready).to.deep.include({ kind: 'change', capacity: false });
    expect((ready as typeof set).change).to.deep.include({ to: 'cleared', reason: 'ready' });
    s = afterChange(s, ready as typeof set);
    // Its first capacity change is not held either.
    expect(
      decideSignal(s, { kind: 'taint', reason: 'max-ip-count', why: 'cap' }, 900).kind,
    ).to.equal('change');
  });

  it('a taint left by an earlier run is read with its reason', () => {
    const s = afterRead(initialSignalState(), {
      key: TAINT_KEY,
      value: 'max-ip-count',
      effect: 'NoSchedule',
    });
    expect(s).to.deep.include({ tainted: true, reason: 'max-ip-count' });
    expect(decideSignal(s, { kind: 'clear', why: 'room' }, 0).kind).to.equal('change');
  });

  it('sets and removes only its own taint, others kept in place, and tests what it read', () => {
    const other = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
    const gpu = { key: 'gpu', value: 'yes', effect: 'NoExecute' };
    expect(taintsWith([other], 'subnet-exhausted')).to.deep.equal([
      other,
      { key: TAINT_KEY, value: 'subnet-exhausted', effect: 'NoSchedule' },
    ]);
    const ours = { key: TAINT_KEY, value: 'not-ready', effect: 'NoSchedule' };
    expect(taintsWith([other, ours, gpu], 'max-ip-count')).to.deep.equal([
      other,
      { key: TAINT_KEY, value: 'max-ip-count', effect: 'NoSchedule' },
      gpu,
    ]);
    expect(taintsWith([other, ours, gpu], undefined)).to.deep.equal([other, gpu]);
    expect(taintPatch({ spec: { taints: [other] } }, [])).to.deep.equal([
      { op: 'test', path: '/spec/taints', value: [other] },
      { op: 'replace', path: '/spec/taints', value: [] },
    ]);
    expect(taintPatch({ metadata: { resourceVersion: '7' }, spec: {} }, [ours])).to.deep.equal([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/spec/taints', value: [ours] },
    ]);
    expect(taintPatch({ metadata: { resourceVersion: '7' } }, [ours])[1]).to.deep.equal({
      op: 'add',
      path: '/spec',
      value: { taints: [ours] },
    });
  });

  it('the Node adapter reads again and patches again when the Node changed meanwhile', async () => {
    const other = { key: 'x', effect: 'NoSchedule' };
    let stored: { metadata: { resourceVersion: string }; spec: { taints?: Taint[] } } = {
      metadata: { resourceVersion: '1' },
      spec: {},
    };
    const patches: unknown[] = [];
    const api: NodeCalls = {
      readNode: () => Promise.resolve(structuredClone(stored)),
      patchNode: ({ body }) => {
        patches.push(body);
        const ops = body as { op: string; path: string; value: unknown }[];
        const test = ops[0]!;
        const now =
          test.path === '/spec/taints' ? stored.spec.taints : stored.metadata.resourceVersion;
        if (JSON.stringify(now) !== JSON.stringify(test.value))
          return Promise.reject(Object.assign(new Error('test failed'), { code: 422 }));
        stored = {
          metadata: { resourceVersion: String(Number(stored.metadata.resourceVersion) + 1) },
          spec: { taints: ops[1]!.value as Taint[] },
        };
        return Promise.resolve(structuredClone(stored));
      },
    };
    const node = nodeTaints({ api, name: 'n' });
    expect(await node.read()).to.equal(undefined);
    // Someone else taints the node between the read and the write.
    stored = { metadata: { resourceVersion: '2' }, spec: { taints: [other] } };
    expect(await node.write('subnet-exhausted')).to.deep.include({ value: 'subnet-exhausted' });
    expect(stored.spec.taints).to.deep.equal([
      other,
      { key: TAINT_KEY, value: 'subnet-exhausted', effect: 'NoSchedule' },
    ]);
    expect(patches).to.have.length(2);
    // Nothing to do: no patch.
    expect(await node.write('subnet-exhausted')).to.deep.include({ value: 'subnet-exhausted' });
    expect(patches).to.have.length(2);
    await node.write(undefined);
    expect(stored.spec.taints).to.deep.equal([other]);
  });
});

describe('sidecar/schedule-signal: the loop', () => {
  const dry = (demand: number, available: number): SignalObservation => {
    const capacity = figures(demand, { Assigned: demand, Available: available }, true);
    return { want: wantOf(usable, capacity), capacity };
  };

  it('a flapping pool changes the signal at most once a minute', async () => {
    const clock = new VirtualClock();
    const node = fakeNode();
    let free = 1;
    const loop = new ScheduleSignalLoop({
      node,
      observe: () => dry(10, free),
      logger: silentLogger(),
      clock,
      checkMs: 1000,
    });
    const changes: number[] = [];
    loop.start();
    // Demand crosses the boundary every 3 s for ten minutes.
    for (let s = 0; s < 600; s += 3) {
      free = free === 0 ? 1 : 0;
      loop.poke();
      await clock.advance(3000);
      const c = loop.status().changes;
      if (c > changes.length) changes.push(clock.now());
    }
    await loop.stop();
    const times = loop.status();
    expect(times.changes).to.be.within(8, 10);
    for (let i = 1; i < changes.length; i += 1)
      expect(changes[i]! - changes[i - 1]!).to.be.at.least(HOLD_MS - 3000);
    expect(node.writes.length).to.equal(times.changes);
  });

  it('changes exactly once a minute at most, by the clock of the changes themselves', async () => {
    const clock = new VirtualClock();
    const node = fakeNode();
    let free = 0;
    const at: number[] = [];
    const loop = new ScheduleSignalLoop({
      node,
      observe: () => dry(10, free),
      logger: silentLogger(),
      clock,
      checkMs: 500,
      onChange: () => at.push(clock.now()),
    });
    loop.start();
    for (let i = 0; i < 1200; i += 1) {
      free = i % 2;
      loop.poke();
      await clock.advance(500);
    }
    await loop.stop();
    expect(at.length).to.be.at.least(5);
    for (let i = 1; i < at.length; i += 1) expect(at[i]! - at[i - 1]!).to.be.at.least(HOLD_MS);
  });

  it('taints a new node at once, clears it as soon as its pool is usable, and backs off a failing write', async () => {
    const clock = new VirtualClock();
    const node = fakeNode();
    let obs: SignalObservation = {
      want: wantOf({ kind: 'not-usable', why: 'no NNC yet' }, undefined),
    };
    const loop = new ScheduleSignalLoop({
      node,
      observe: () => obs,
      logger: silentLogger(),
      clock,
      checkMs: 1000,
      backoff: { initialMs: 2000, maxMs: 8000, jitter: 0 },
    });
    loop.start();
    await clock.advance(10);
    expect(node.writes).to.deep.equal(['not-ready']);
    expect(loop.status()).to.deep.include({ tainted: true, reason: 'not-ready' });
    obs = dry(0, 1);
    node.fail = 2;
    loop.poke();
    await clock.advance(200);
    expect(loop.status().lastError).to.match(/boom/);
    expect(node.writes).to.deep.equal(['not-ready']);
    await clock.advance(2000); // the first retry fails too
    expect(node.writes).to.deep.equal(['not-ready']);
    await clock.advance(4000); // the second succeeds
    expect(node.writes).to.deep.equal(['not-ready', undefined]);
    expect(loop.status()).to.deep.include({ tainted: false, lastError: null, changes: 2 });
    expect(loop.history().map((m) => [m.canServe, m.waiting])).to.deep.equal([
      [false, false],
      [true, false],
    ]);
    await loop.stop();
  });
});
