// The reconcile step as a table, run against decide (pure): the CNS IPAM v2
// monitor's reconcile table ported as data, then one row (or a few) per
// rule of docs/design/scaling.md "What a reconcile does". States are built by the
// monitor's own reducer from the inputs a node would see. The two CNS rows
// about failing effects (mark, patch) run through the whole monitor below.
import { expect } from 'chai';
import { cnsV2Policy } from '../../src/scaling/policies/fixed-delay.ts';
import type { AnyPolicy } from '../../src/scaling/policies/policy.ts';
import { of } from 'rxjs';
import { decide, type Decision, type StoreView } from '../../src/monitor/decide.ts';
import { reduce } from '../../src/monitor/reduce.ts';
import {
  initialState,
  isDue,
  type MonitorInput,
  type MonitorState,
} from '../../src/monitor/state.ts';
import type { ReconcileOutcome } from '../../src/monitor/types.ts';
import { makeNnc, SCALER } from './fakes.ts';
import { runScenario } from './harness.ts';
import { MemoryPoolStore } from './memory-store.ts';

interface Given {
  demand: number;
  /** spec.requestedIPCount of the NNC. */
  request: number;
  exhausted?: boolean;
  scaler?: Record<string, unknown>;
  /** Ids in spec.ipsNotInUse. */
  ipsNotInUse?: string[];
  /** Ids the status backs (default: those of ipsNotInUse); a view's PendingRelease ids must be among them. */
  backed?: string[];
  generation?: number;
  releaseDelayMs?: number;
  writeWindowMs?: number;
  policy?: AnyPolicy;
}

const ids = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);

function nncInput(g: Given, at = 0, extra: { uid?: string } = {}): MonitorInput {
  return {
    type: 'nnc',
    at,
    nnc: makeNnc({
      request: g.request,
      ipsNotInUse: g.ipsNotInUse ?? [],
      ids: g.backed ?? g.ipsNotInUse ?? [],
      generation: g.generation ?? 1,
      ...(g.scaler ? { scaler: g.scaler } : {}),
      ...extra,
    }),
  };
}

/** The state a monitor is in after seeing `g` at time 0 (and then `more`). */
function given(g: Given, ...more: MonitorInput[]): MonitorState {
  const inputs: MonitorInput[] = [
    { type: 'demand', at: 0, value: g.demand },
    { type: 'exhausted', at: 0, value: g.exhausted ?? false },
    nncInput(g),
    ...more,
  ];
  return inputs.reduce(
    reduce,
    initialState({
      releaseDelayMs: g.releaseDelayMs ?? 0,
      writeWindowMs: g.writeWindowMs ?? 500,
      ...(g.policy ? { policy: g.policy } : {}),
    }),
  );
}

/** What the store holds: PendingRelease ids, active IPs, and how many of them can be marked (default: all). */
function view(pending: string[], active: number, markable = active): StoreView {
  return { pendingReleaseIds: pending, activeCount: active, markableCount: markable };
}

/** An outcome of a write of `request` at `at` (kind, wrote … overridable). */
function written(
  s: MonitorState,
  at: number,
  request: number,
  ipsNotInUse: string[] = [],
  generation = 2,
): ReconcileOutcome {
  return {
    kind: 'scaled',
    at,
    demand: s.demand ?? 0,
    exhausted: false,
    scaler: { batch: 16, buffer: 0.5, max: 250 },
    target: request,
    applied: request,
    from: s.request ?? 0,
    to: request,
    delta: request - (s.request ?? 0),
    marked: 0,
    wrote: true,
    spec: { requestedIPCount: request, ipsNotInUse },
    generation,
  };
}

/** An outcome fed back, as the monitor does after each reconcile of `s`. */
function fed(s: MonitorState, outcome: ReconcileOutcome): MonitorInput {
  return {
    type: 'reconciled',
    at: outcome.at,
    outcome,
    ran: { wanted: s.wanted, uid: s.nnc?.uid },
  };
}

function wrote(
  s: MonitorState,
  at: number,
  request: number,
  ids: string[] = [],
  generation = 2,
): MonitorInput {
  return fed(s, written(s, at, request, ids, generation));
}

function pick(d: Decision): Record<string, unknown> {
  return {
    target: d.target,
    delta: d.delta,
    mark: d.mark,
    reason: d.reason,
    request: d.spec?.requestedIPCount,
    ipsNotInUse: d.spec?.ipsNotInUse.length,
  };
}

// The CNS v2 monitor's table. Scaler of every row: batch 16, buffer 0.5, max 250.
// pendingRelease/available: what the store holds; want: what to mark, what to write.
const cns: {
  name: string;
  demand: number;
  request: number;
  pendingRelease?: number;
  available?: number;
  mark: number;
  write?: { request: number; ipsNotInUse: number };
}[] = [
  { name: 'no delta', demand: 5, request: 16, mark: 0 },
  {
    name: 'single scale up',
    demand: 15,
    request: 16,
    mark: 0,
    write: { request: 32, ipsNotInUse: 0 },
  },
  {
    name: 'big scale up',
    demand: 75,
    request: 16,
    mark: 0,
    write: { request: 96, ipsNotInUse: 0 },
  },
  {
    name: 'capped scale up',
    demand: 300,
    request: 16,
    mark: 0,
    write: { request: 250, ipsNotInUse: 0 },
  },
  {
    name: 'single scale down',
    demand: 5,
    request: 32,
    available: 32,
    mark: 16,
    write: { request: 16, ipsNotInUse: 0 },
  },
  {
    name: 'big scale down',
    demand: 5,
    request: 128,
    available: 128,
    mark: 112,
    write: { request: 16, ipsNotInUse: 0 },
  },
  {
    name: 'capped scale down',
    demand: 0,
    request: 32,
    available: 32,
    mark: 16,
    write: { request: 16, ipsNotInUse: 0 },
  },
  {
    name: 'scale up unskew',
    demand: 15,
    request: 3,
    mark: 0,
    write: { request: 32, ipsNotInUse: 0 },
  },
  {
    name: 'scale down unskew',
    demand: 5,
    request: 37,
    available: 37,
    mark: 21,
    write: { request: 16, ipsNotInUse: 0 },
  },
  {
    name: 'single scale up with pending release',
    demand: 20,
    request: 16,
    pendingRelease: 16,
    available: 16,
    mark: 0,
    write: { request: 32, ipsNotInUse: 16 },
  },
  {
    name: 'single scale down with pending release',
    demand: 5,
    request: 32,
    pendingRelease: 16,
    available: 32,
    mark: 16,
    write: { request: 16, ipsNotInUse: 16 },
  },
  // CNS calls mark with 0 here; the effect is the same.
  {
    name: 'scale down with stale request and existing pending release',
    demand: 5,
    request: 48,
    pendingRelease: 16,
    available: 16,
    mark: 0,
    write: { request: 16, ipsNotInUse: 16 },
  },
];

describe('decide: the CNS reconcile table', () => {
  for (const row of cns) {
    it(row.name, () => {
      const pending = ids('pr', row.pendingRelease ?? 0);
      const s = given({ demand: row.demand, request: row.request, ipsNotInUse: pending });
      const d = decide(s, view(pending, row.available ?? 0), 0);
      expect(d.mark).to.equal(row.mark);
      expect(
        d.spec && { request: d.spec.requestedIPCount, ipsNotInUse: d.spec.ipsNotInUse.length },
      ).to.deep.equal(row.write);
      expect(d.delta).to.equal((row.write?.request ?? row.request) - row.request);
    });
  }
});

describe('decide: the scaling semantics, rule by rule', () => {
  it('a write that changes the request goes out at once unless one went out < 500 ms ago', () => {
    const s0 = given({ demand: 20, request: 16 });
    const s1 = reduce(s0, wrote(s0, 1_000, 32));
    const s2 = reduce(s1, { type: 'demand', at: 1_200, value: 40 });
    expect(pick(decide(s2, view([], 32), 1_200))).to.include({ reason: 'write-window', mark: 0 });
    expect(decide(s2, view([], 32), 1_200).wake).to.deep.equal({
      reason: 'write-window',
      at: 1_500,
    });
    expect(decide(s2, view([], 32), 1_200).spec).to.equal(undefined);
    // At the end of the window, with the latest state.
    expect(pick(decide(s2, view([], 32), 1_500))).to.include({ reason: 'scale-up', request: 48 });
    // The very first write has no window before it.
    expect(pick(decide(s0, view([], 16), 0))).to.include({ reason: 'scale-up', request: 32 });
  });

  it('a correction with the request unchanged is not held by the window', () => {
    const s0 = given({ demand: 5, request: 16, backed: ['a'] });
    const s1 = reduce(s0, wrote(s0, 1_000, 16, ['gone']));
    const s2 = reduce(
      s1,
      nncInput(
        { demand: 5, request: 16, ipsNotInUse: ['gone'], backed: ['a'], generation: 2 },
        1_100,
      ),
    );
    expect(pick(decide(s2, view(['gone'], 1), 1_100))).to.include({
      reason: 'spec differs',
      request: 16,
      ipsNotInUse: 0,
    });
  });

  const scalerRows: [
    string,
    Record<string, unknown>,
    number,
    { batch: number; max: number; buffer: number },
  ][] = [
    [
      'max = min(maxIPCount, 250)',
      { ...SCALER, maxIPCount: 400 },
      300,
      { batch: 16, buffer: 0.5, max: 250 },
    ],
    [
      'batch = clamp(batchSize, 1, max)',
      { ...SCALER, batchSize: 64, maxIPCount: 40 },
      10,
      { batch: 40, buffer: 0.5, max: 40 },
    ],
    [
      'buffer = |requestThresholdPercent| / 100',
      { ...SCALER, requestThresholdPercent: -150 },
      10,
      { batch: 16, buffer: 1.5, max: 250 },
    ],
    [
      'a missing maxIPCount means 250',
      { batchSize: 16, requestThresholdPercent: 50 },
      300,
      { batch: 16, buffer: 0.5, max: 250 },
    ],
    [
      'a zero or negative maxIPCount means 250',
      { ...SCALER, maxIPCount: -3 },
      300,
      { batch: 16, buffer: 0.5, max: 250 },
    ],
    [
      'a zero or negative batchSize means 1',
      { ...SCALER, batchSize: 0 },
      10,
      { batch: 1, buffer: 0.5, max: 250 },
    ],
  ];
  for (const [name, scaler, demand, want] of scalerRows) {
    it(`scaler from the NNC: ${name}`, () => {
      const d = decide(given({ demand, request: 16, scaler }), view([], 16), 0);
      expect(d.scaler).to.deep.equal(want);
      const batches = Math.ceil(want.buffer + demand / want.batch);
      expect(d.target).to.equal(Math.min(want.max, want.batch * batches));
    });
  }

  it('bad scaler fields are warned about by name and crash nothing', () => {
    const s = given({ demand: 5, request: 16, scaler: { batchSize: 'x', maxIPCount: null } });
    const events = s.notices.flatMap((n) =>
      n.event?.type === 'scaler-invalid' ? [n.event.field] : [],
    );
    expect(events).to.deep.equal(['maxIPCount', 'batchSize', 'requestThresholdPercent']);
    expect(decide(s, view([], 16), 0).target).to.equal(5);
  });

  it('exhausted subnet: batch 1, buffer 1', () => {
    const d = decide(given({ demand: 20, request: 32, exhausted: true }), view([], 32), 0);
    expect(d.scaler).to.deep.equal({ batch: 1, buffer: 1, max: 250 });
    expect(pick(d)).to.include({ target: 21, delta: -11, mark: 11, request: 21 });
  });

  it('no reconcile before every watch has listed and a valid NNC arrived', () => {
    const fresh = initialState({ releaseDelayMs: 0, writeWindowMs: 500 });
    const steps: MonitorInput[] = [
      { type: 'demand', at: 0, value: 5 },
      { type: 'nnc', at: 0, nnc: makeNnc({ containers: false }) }, // no dynamic container
      { type: 'exhausted', at: 0, value: false },
      nncInput({ demand: 5, request: 16 }),
    ];
    const due = steps.map((_, i) => isDue(steps.slice(0, i + 1).reduce(reduce, fresh)));
    expect(due).to.deep.equal([false, false, false, true]);
  });

  it('delta = 0 and nothing stale: no write at all', () => {
    const d = decide(given({ demand: 5, request: 16 }), view([], 16), 0);
    expect(pick(d)).to.include({ delta: 0, mark: 0, reason: 'at-target', request: undefined });
  });

  it('delta < 0: marks -delta, never more than the active IPs above the target (0004)', () => {
    const s = given({ demand: 5, request: 64, backed: ids('pr', 64) });
    expect(decide(s, view([], 64), 0).mark).to.equal(48);
    // The status holds only 40: marking 48 would leave the node below its target.
    expect(decide(s, view([], 40), 0).mark).to.equal(24);
    // Marks a failed write left behind are not made again.
    const failedWrite = {
      ...written(s, 0, 16),
      kind: 'failed',
      wrote: false,
      to: 64,
      marked: 48,
    } as const;
    const after = reduce(s, fed(s, failedWrite));
    expect(pick(decide(after, view(ids('pr', 48), 16), 1_000))).to.include({
      mark: 0,
      request: 16,
      ipsNotInUse: 48,
    });
  });

  it('scale-down marks only what can be marked: leaked Assigned IPs never wedge it (review defect)', () => {
    const s = given({ demand: 5, request: 32 });
    // 32 active IPs, but 26 are Assigned (5 pods and 21 leaked): only 6 can be marked.
    expect(pick(decide(s, view([], 32, 6), 0))).to.include({ mark: 6, request: 16, delta: -16 });
    // Nothing markable: the request still moves, nothing is marked.
    expect(pick(decide(s, view([], 32, 0), 0))).to.include({ mark: 0, request: 16 });
  });

  it('a pool left above its request gives the surplus back once it can be marked', () => {
    // Request 16 written; the store holds 32 active IPs (a capped scale-down
    // left 16 leaked Assigned ones, since reclaimed, or the status ran ahead).
    const s = given({ demand: 5, request: 16 });
    expect(pick(decide(s, view([], 32, 16), 0))).to.include({
      delta: 0,
      mark: 16,
      reason: 'surplus',
      request: 16,
    });
    // What cannot be marked is no reason to write: no write, no hot loop.
    expect(pick(decide(s, view([], 32, 0), 0))).to.include({
      mark: 0,
      reason: 'at-target',
      request: undefined,
    });
    // Marks not written yet are PendingRelease, not active: not marked again.
    expect(pick(decide(s, view(ids('pr', 16), 16, 16), 0))).to.include({ mark: 0 });
  });

  it('the spec carries every PendingRelease id, stale ones dropped', () => {
    const s = given({ demand: 5, request: 32, ipsNotInUse: ['p1', 'gone'], backed: ['p1', 'a'] });
    const d = decide(s, view(['gone', 'p1'], 17), 0);
    expect(d.spec).to.deep.equal({ requestedIPCount: 16, ipsNotInUse: ['p1'] });
    expect(d.mark).to.equal(1);
  });

  it('a policy with staleClearMs: dropping stale ids alone waits for the next write, at most that long', () => {
    const folding: AnyPolicy = { ...cnsV2Policy(), name: 'folding', staleClearMs: 60_000 };
    const g = { demand: 5, request: 16, ipsNotInUse: ['gone'], backed: ['a'], policy: folding };
    const s = given(g);
    const held = decide(s, view([], 16), 1_000);
    expect(pick(held)).to.include({ reason: 'deferred', delta: 0, request: undefined });
    expect(held.wake).to.deep.equal({ reason: 'damping', at: 60_000 });
    expect(held.why?.summary).to.match(/1 stale ids/);
    // At the deadline it goes out alone; a scale-up before it carries the clear along.
    expect(pick(decide(s, view([], 16), 60_000))).to.include({
      reason: 'spec differs',
      ipsNotInUse: 0,
    });
    const up = reduce(s, { type: 'demand', at: 2_000, value: 20 });
    expect(pick(decide(up, view([], 16), 2_000))).to.include({
      reason: 'scale-up',
      request: 32,
      ipsNotInUse: 0,
    });
    // CNS v2 (no staleClearMs) writes the clear at once.
    expect(decide(given({ ...g, policy: cnsV2Policy() }), view([], 16), 1_000).reason).to.equal(
      'spec differs',
    );
  });

  it('the request moves only when the write succeeded', () => {
    const s = given({ demand: 20, request: 16 });
    const after = reduce(s, fed(s, { ...written(s, 0, 32), kind: 'failed', wrote: false, to: 16 }));
    expect(after.request).to.equal(16);
    expect(reduce(s, wrote(s, 0, 32)).request).to.equal(32);
  });

  it('--release-delay: a lower target only once it has held that long; a higher one at once', () => {
    const s = given({ demand: 5, request: 32, releaseDelayMs: 30_000 });
    expect(pick(decide(s, view([], 32), 10_000))).to.include({ reason: 'deferred', delta: 0 });
    expect(decide(s, view([], 32), 10_000).wake).to.deep.equal({ reason: 'damping', at: 30_000 });
    expect(pick(decide(s, view([], 32), 30_000))).to.include({ reason: 'scale-down', mark: 16 });
    const up = reduce(s, { type: 'demand', at: 10_000, value: 40 });
    expect(pick(decide(up, view([], 32), 10_000))).to.include({ reason: 'scale-up', request: 48 });
  });

  it('PendingRelease ids restored at start that the spec carries are no reason to write', () => {
    const s = given({
      demand: 5,
      request: 16,
      ipsNotInUse: ['p1', 'p2'],
      backed: ['p1', 'p2', 'a'],
    });
    expect(pick(decide(s, view(['p1', 'p2'], 16), 0))).to.include({ reason: 'at-target' });
  });

  it('ids of spec.ipsNotInUse no longer in the status: cleared with one write, request unchanged', () => {
    const s = given({ demand: 5, request: 16, ipsNotInUse: ['gone'], backed: ['a'] });
    expect(pick(decide(s, view([], 16), 0))).to.include({
      reason: 'spec differs',
      delta: 0,
      request: 16,
      ipsNotInUse: 0,
    });
  });

  it('out-of-band edits are corrected; our own write coming back is no edit', () => {
    const s0 = given({ demand: 5, request: 16 });
    const s1 = reduce(s0, wrote(s0, 0, 16, [], 2));
    const echo = reduce(s1, nncInput({ demand: 5, request: 16, generation: 2 }, 10));
    expect(decide(echo, view([], 16), 10).reason).to.equal('at-target');
    const stale = reduce(echo, nncInput({ demand: 5, request: 99, generation: 1 }, 20)); // an older view, late
    expect(decide(stale, view([], 16), 20).reason).to.equal('at-target');
    const edit = reduce(echo, nncInput({ demand: 5, request: 99, generation: 3 }, 30));
    expect(pick(decide(edit, view([], 16), 30))).to.include({
      reason: 'spec differs',
      request: 16,
    });
  });

  it("the NNC's identity is its uid: recreated, it is written again (review defect)", () => {
    const a = given(
      { demand: 20, request: 16 },
      nncInput({ demand: 20, request: 16 }, 0, { uid: 'a' }),
    );
    const s1 = reduce(a, wrote(a, 0, 32, [], 2));
    // Deleted and recreated: request 0 at generation 1, which is below our write's 2.
    const b = reduce(s1, nncInput({ demand: 20, request: 0, generation: 1 }, 1_000, { uid: 'b' }));
    expect(b.request).to.equal(0);
    expect(pick(decide(b, view([], 0), 1_000))).to.include({ reason: 'scale-up', request: 32 });
    // The same object (same uid) seen again changes nothing.
    const again = reduce(
      s1,
      nncInput({ demand: 20, request: 0, generation: 1 }, 1_000, { uid: 'a' }),
    );
    expect(decide(again, view([], 32), 1_000).reason).to.equal('at-target');
  });
});

describe('monitor: the CNS rows about failing effects', () => {
  const start = (mem: MemoryPoolStore, request: number, demand: number) => ({
    mem,
    inputs: () => ({
      demand$: of(demand),
      exhausted$: of(false),
      nnc$: of(makeNnc({ request, ids: [...mem.ips.keys()], generation: 1 })),
    }),
  });

  it('fail to release: nothing written, request unchanged', () => {
    const mem = new MemoryPoolStore();
    mem.add(32, 'Available');
    const h = runScenario(start(mem, 32, 6), (hh) => (hh.store.markError = new Error('no')));
    expect(h.outcomes.map((o) => [o.kind, o.stage])).to.deep.equal([['failed', 'mark']]);
    expect(mem.markCalls).to.deep.equal([16]);
    expect(h.writer.writes).to.have.length(0);
    expect(h.monitor.snapshot().request).to.equal(32);
  });

  it('fail to patch: the request does not move', () => {
    const h = runScenario(start(new MemoryPoolStore(), 16, 20), (hh) =>
      hh.writer.script.push(new Error('failed to patch NNC spec')),
    );
    expect(h.outcomes.map((o) => [o.kind, o.stage])).to.deep.equal([['failed', 'write']]);
    expect(h.writer.writes.map((w) => w.spec)).to.deep.equal([
      { requestedIPCount: 32, ipsNotInUse: [] },
    ]);
    expect(h.monitor.snapshot().request).to.equal(16);
  });

  it('leaked Assigned IPs present: the scale-down still releases what it can (review defect)', () => {
    const mem = new MemoryPoolStore();
    mem.add(26, 'Assigned');
    mem.add(6, 'Available');
    const h = runScenario(start(mem, 32, 5), () => {});
    expect(h.outcomes.map((o) => [o.kind, o.marked])).to.deep.equal([['scaled', 6]]);
    expect(mem.markCalls).to.deep.equal([6]);
    expect(
      h.writer.writes.map((w) => [w.spec.requestedIPCount, w.spec.ipsNotInUse.length]),
    ).to.deep.equal([[16, 6]]);
    expect(h.monitor.snapshot().request).to.equal(16);
  });

  it('leaked IPs reclaimed after a capped scale-down: the surplus is marked on the next reconcile', () => {
    const mem = new MemoryPoolStore();
    const leaked = mem.add(21, 'Assigned', 'leaked');
    mem.add(5, 'Assigned');
    mem.add(6, 'Available');
    const h = runScenario({ ...start(mem, 32, 5), tickMs: 1_000, stopAt: 3_500 }, (hh) =>
      hh.at(1_500, () => {
        for (const id of leaked) mem.ips.set(id, 'Available');
      }),
    );
    expect(h.outcomes.map((o) => [o.t, o.kind, o.marked])).to.deep.equal([
      [0, 'scaled', 6],
      [1_000, 'at-target', 0],
      [2_000, 'corrected', 10],
      [3_000, 'at-target', 0],
    ]);
    expect(
      h.writer.writes.map((w) => [w.spec.requestedIPCount, w.spec.ipsNotInUse.length]),
    ).to.deep.equal([
      [16, 6],
      [16, 16],
    ]);
  });

  it('a store change outside the monitor (leaks reclaimed) is reconciled at once, not at the next tick', () => {
    const mem = new MemoryPoolStore();
    const leaked = mem.add(21, 'Assigned', 'leaked');
    mem.add(5, 'Assigned');
    mem.add(6, 'Available');
    const h = runScenario({ ...start(mem, 32, 5), stopAt: 3_000 }, (hh) =>
      hh.at(1_500, () => {
        for (const id of leaked) mem.ips.set(id, 'Available');
        hh.storeChanged.next();
      }),
    );
    expect(h.outcomes.map((o) => [o.t, o.kind, o.marked])).to.deep.equal([
      [0, 'scaled', 6],
      [1_500, 'corrected', 10],
    ]);
  });

  it('a failed write is retried without releasing twice', () => {
    const mem = new MemoryPoolStore();
    mem.add(32, 'Available');
    const h = runScenario(
      { ...start(mem, 32, 5), stopAt: 5_000, backoff: { initialMs: 1_000, jitter: 0 } },
      (hh) => hh.writer.script.push(new Error('failed to patch NNC spec')),
    );
    expect(h.outcomes.map((o) => o.kind)).to.deep.equal(['failed', 'scaled']);
    expect(mem.markCalls).to.deep.equal([16]);
    expect(
      h.writer.writes.map((w) => [w.at, w.spec.requestedIPCount, w.spec.ipsNotInUse.length]),
    ).to.deep.equal([
      [0, 16, 16],
      [1_000, 16, 16],
    ]);
    expect(h.monitor.snapshot().request).to.equal(16);
  });
});
