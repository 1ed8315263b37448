// The scheduler of the interleaving explorer (docs/design/fulfiller.md#high-availability): a seed picks
// a sequence of steps over a World (world.ts); after every step the cluster
// is checked: no address on two NNCs, and no address of a deleted Node on
// another node's NNC before the grace since that Node's deletion is over
// (the explorer's pods never go: a quarantine lasts its grace). The oracle
// is the world's record of what it deleted and when, not the fulfiller's.
// Once the faults stop, every NNC must converge: each Node's NNC holds what
// its spec asks for, none is left of a deleted Node.
import type { NodeNetworkConfig } from '../../../src/nnc/types.ts';
import { dynamicContainers, NNC_PLURAL } from '../../../src/nnc/types.ts';
import { EPOCH, holders, World } from './world.ts';
import type { WriteTarget } from './world.ts';

export const NODES = ['n1', 'n2', 'n3', 'n4'];

export type Step =
  | { kind: 'spec'; node: string; request: number; release?: number }
  | { kind: 'deliver'; replica: number }
  | { kind: 'cut'; replica: number; nodes?: boolean }
  | { kind: 'restore'; replica: number }
  | { kind: 'run' }
  | { kind: 'hold'; ms: number }
  | { kind: 'lose'; replica: number }
  | { kind: 'fail-after-apply' }
  | { kind: 'handover' }
  /** The Lease holder steps down and nobody takes it: no replica leads until the next handover. */
  | { kind: 'resign' }
  /** With `gc`, the garbage collector deletes the Node's NNC moments after (world.ts). */
  | { kind: 'deleteNode'; node: string; gc?: boolean }
  | { kind: 'addNode'; node: string }
  | { kind: 'deleteNnc'; node: string }
  /** The garbage collector's pass: NNCs whose owner Node is gone are deleted. */
  | { kind: 'gc' }
  /** The next `times` writes of `target` are refused (nothing applied). */
  | { kind: 'fail'; target: WriteTarget; status: 500 | 503; times: number }
  /** The next write of `target` is applied, but its answer is lost (a 504). */
  | { kind: 'lose-answer'; target: WriteTarget }
  /** The Lease holder steps down and takes the Lease again: a new term over its old memory. */
  | { kind: 'relead' }
  /** The Node is deleted and registers again at once under its name (a new uid). */
  | { kind: 'reregister'; node: string; gc?: boolean }
  | { kind: 'time'; ms: number };

/**
 * The review's case (as in ha.process.test.ts; docs/design/fulfiller.md#high-availability),
 * the explorer's first fixture: the standby's NNC watch is down while the
 * leader grows n1 to 32 addresses and loses the Lease; a Node joins; the
 * standby leads.
 */
export const REVIEW_CASE: Step[] = [
  { kind: 'cut', replica: 1, nodes: false },
  { kind: 'deliver', replica: 0 },
  { kind: 'spec', node: 'n1', request: 32 },
  { kind: 'deliver', replica: 0 },
  { kind: 'run' },
  { kind: 'handover' },
  { kind: 'addNode', node: 'n4' },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'spec', node: 'n2', request: 16 },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'restore', replica: 1 },
  { kind: 'run' },
];

/** Both replicas take what changed since their last delivery, then the leader works. */
const bothTakeThenRun = (): Step[] => [
  { kind: 'deliver', replica: 0 },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
];

/**
 * The garbage collector deletes n1's NNC moments after its Node while
 * replica a leads, and a goes on handing out addresses around the subnet
 * (its next-fit cursor wraps onto n1's addresses) within n1's grace.
 */
export const GC_WHILE_LEADING: Step[] = [
  { kind: 'spec', node: 'n1', request: 12 },
  ...bothTakeThenRun(),
  { kind: 'deleteNode', node: 'n1', gc: true },
  ...bothTakeThenRun(),
  { kind: 'spec', node: 'n2', request: 44 },
  { kind: 'spec', node: 'n3', request: 44 },
  ...bothTakeThenRun(),
  { kind: 'addNode', node: 'n4' },
  { kind: 'deliver', replica: 0 },
  { kind: 'run' },
  { kind: 'spec', node: 'n4', request: 24 },
  ...bothTakeThenRun(),
  { kind: 'time', ms: 61_000 },
  { kind: 'run' },
];

/**
 * The garbage collector deletes n1's NNC after its Node while no replica
 * leads (a stepped down, b has not taken the Lease): both only watch it go.
 * Then b leads from its fresh list (its cursor starts at the subnet's first
 * address, n1's) and hands out addresses.
 */
export const GC_WITHOUT_LEADER: Step[] = [
  { kind: 'spec', node: 'n1', request: 12 },
  ...bothTakeThenRun(),
  { kind: 'resign' },
  { kind: 'deleteNode', node: 'n1' },
  ...bothTakeThenRun(),
  { kind: 'gc' },
  { kind: 'deliver', replica: 0 },
  { kind: 'deliver', replica: 1 },
  { kind: 'time', ms: 5_000 },
  { kind: 'handover' },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'spec', node: 'n2', request: 16 },
  { kind: 'addNode', node: 'n4' },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'spec', node: 'n4', request: 16 },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'time', ms: 61_000 },
  { kind: 'run' },
];

/**
 * The garbage collector deletes n1's NNC moments after its Node while the
 * ClusterSubnetState's status writes, NNC status writes and NNC metadata
 * patches (the finalizer, the term fence's mark) are refused; the Lease
 * changes hands in the middle, and the new leader hands out addresses.
 */
export const GC_WHILE_WRITES_FAIL: Step[] = [
  { kind: 'spec', node: 'n1', request: 12 },
  ...bothTakeThenRun(),
  { kind: 'fail', target: 'css-status', status: 500, times: 3 },
  { kind: 'fail', target: 'nnc-status', status: 500, times: 2 },
  { kind: 'fail', target: 'nnc', status: 503, times: 2 },
  { kind: 'deleteNode', node: 'n1', gc: true },
  { kind: 'spec', node: 'n2', request: 16 },
  ...bothTakeThenRun(),
  { kind: 'handover' },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'spec', node: 'n3', request: 16 },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'time', ms: 5_000 },
  { kind: 'run' },
  { kind: 'time', ms: 61_000 },
  { kind: 'run' },
];

/**
 * Open (src/fulfiller, reported with issue 39): n1's Node is deleted, the
 * garbage collector deletes its NNC (terminating: the quarantine's record),
 * and n1 re-registers within its grace (its kubelet lives, its pods run).
 * The leader lets the terminating NNC go ('replace': finalizer off, the
 * addresses kept in its memory only) and recreates it, but the write that
 * would give the successor n1's addresses is refused; the Lease changes
 * hands before it is tried again, to the standby whose watches were down
 * all along (it never saw n1's addresses). Its fresh list has n1's Node and
 * an empty NNC, no record of n1's addresses anywhere: it hands them to n2.
 */
export const REREGISTERED_THEN_HANDOVER: Step[] = [
  { kind: 'cut', replica: 1, nodes: true },
  { kind: 'spec', node: 'n1', request: 8 },
  { kind: 'deliver', replica: 0 },
  { kind: 'run' },
  { kind: 'deleteNode', node: 'n1', gc: true },
  { kind: 'addNode', node: 'n1' },
  { kind: 'deliver', replica: 0 },
  { kind: 'fail', target: 'nnc-status', status: 500, times: 2 },
  { kind: 'deliver', replica: 0 },
  { kind: 'handover' },
  { kind: 'restore', replica: 1 },
  { kind: 'spec', node: 'n2', request: 12 },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
];

/**
 * Issue 53, the standby's memory: n1 is deleted, quarantined and released
 * while replica b stands by and watches; n1 registers again (a new uid)
 * and is served anew; the Lease goes to b. What b saw of the first n1 may
 * not leave the second n1's status (the oracle: no address leaves a status
 * unreleased), nor reach n2.
 */
export const STANDBY_MEMORY: Step[] = [
  { kind: 'spec', node: 'n1', request: 8 },
  ...bothTakeThenRun(),
  { kind: 'deleteNode', node: 'n1', gc: true },
  ...bothTakeThenRun(),
  { kind: 'time', ms: 91_000 },
  ...bothTakeThenRun(),
  { kind: 'addNode', node: 'n1' },
  ...bothTakeThenRun(),
  { kind: 'spec', node: 'n1', request: 8 },
  ...bothTakeThenRun(),
  { kind: 'handover' },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
  { kind: 'spec', node: 'n2', request: 40 },
  { kind: 'deliver', replica: 1 },
  { kind: 'run' },
];

/**
 * Issue 53, the lost answer: the write that lets n1's released NNC go is
 * applied but its answer lost, while the watches are away; n1 registers
 * again, is served, and is deleted again: its second quarantine holds (the
 * oracle: none of its addresses on n2 within the grace).
 */
export const LOST_RELEASE_ANSWER: Step[] = [
  { kind: 'spec', node: 'n1', request: 8 },
  ...bothTakeThenRun(),
  { kind: 'deleteNode', node: 'n1', gc: true },
  ...bothTakeThenRun(),
  { kind: 'cut', replica: 0, nodes: false },
  { kind: 'lose-answer', target: 'nnc' },
  { kind: 'time', ms: 91_000 },
  { kind: 'run' },
  { kind: 'restore', replica: 0 },
  { kind: 'addNode', node: 'n1' },
  ...bothTakeThenRun(),
  { kind: 'spec', node: 'n1', request: 8 },
  ...bothTakeThenRun(),
  { kind: 'deleteNode', node: 'n1', gc: true },
  ...bothTakeThenRun(),
  { kind: 'spec', node: 'n2', request: 40 },
  ...bothTakeThenRun(),
  { kind: 'time', ms: 5_000 },
  ...bothTakeThenRun(),
];

/**
 * Issue 53, the lost answer of a replace: n1 re-registers (a new uid) and
 * the garbage collector deletes its NNC; the leader lets the terminating
 * NNC go to the new Node (the finalizer off) but the answer is lost, and
 * the Lease changes hands before it creates the successor. The addresses
 * are in no NNC and no pod reports them (the explorer runs none): the
 * successor gets them back (the oracle: none on n2 within the grace).
 */
export const REPLACE_ANSWER_LOST: Step[] = [
  { kind: 'spec', node: 'n1', request: 8 },
  ...bothTakeThenRun(),
  { kind: 'lose-answer', target: 'nnc' },
  { kind: 'reregister', node: 'n1', gc: true },
  { kind: 'deliver', replica: 0 },
  { kind: 'handover' },
  { kind: 'spec', node: 'n2', request: 16 },
  ...bothTakeThenRun(),
];

/**
 * The same, and the re-registered Node is deleted again while no replica
 * leads: the addresses on its Node go with it unless the Node stays,
 * terminating, until a leader has moved them into an NNC of the name
 * (node-restore.ts), which then holds their quarantine.
 */
export const REPLACE_THEN_NODE_DELETED: Step[] = [
  { kind: 'spec', node: 'n1', request: 8 },
  ...bothTakeThenRun(),
  { kind: 'lose-answer', target: 'nnc' },
  { kind: 'reregister', node: 'n1', gc: true },
  { kind: 'deliver', replica: 0 },
  { kind: 'resign' },
  { kind: 'deleteNode', node: 'n1', gc: true },
  { kind: 'handover' },
  { kind: 'spec', node: 'n2', request: 16 },
  ...bothTakeThenRun(),
  { kind: 'time', ms: 5_000 },
  ...bothTakeThenRun(),
];

/** Issue 53's fixtures. */
export const RECORD_CASES: Array<[string, Step[]]> = [
  [
    "a standby that watched a Node go and come back leads: the live Node's addresses stay its own",
    STANDBY_MEMORY,
  ],
  [
    'a release whose answer was lost: the Node back and deleted again is quarantined again',
    LOST_RELEASE_ANSWER,
  ],
  [
    "a replace whose answer was lost: the new leader gives the Node's addresses back to it",
    REPLACE_ANSWER_LOST,
  ],
  [
    'the same, the Node deleted again while nobody leads: its addresses stay quarantined',
    REPLACE_THEN_NODE_DELETED,
  ],
];

/** The garbage collector's fixtures (issue 39), with what each holds to. */
export const GC_CASES: Array<[string, Step[]]> = [
  ["the garbage collector deletes a deleted Node's NNC while a replica leads", GC_WHILE_LEADING],
  ["the garbage collector deletes a deleted Node's NNC while no replica leads", GC_WITHOUT_LEADER],
  [
    "the garbage collector deletes a deleted Node's NNC while CSS and NNC writes fail",
    GC_WHILE_WRITES_FAIL,
  ],
];

/** When the garbage collector deletes a deleted Node's NNC in a run. */
export type GcSituation = 'leading' | 'leaderless' | 'failing';

/**
 * The situations in which `steps` have the garbage collector delete a
 * deleted Node's NNC (read from the steps alone: a fault 'fail' step among
 * the three before counts as failing writes).
 */
export function gcSituations(steps: Step[]): Set<GcSituation> {
  const out = new Set<GcSituation>();
  const live = new Set(NODES.slice(0, 3));
  const pending = new Set<string>(); // deleted Nodes whose NNC the GC has not deleted
  let leading = true; // explore() starts with a handover
  for (const [i, s] of steps.entries()) {
    let collected = false;
    if (s.kind === 'handover') leading = true;
    else if (s.kind === 'resign') leading = false;
    else if (s.kind === 'addNode') live.add(s.node);
    else if (s.kind === 'deleteNode' && live.delete(s.node)) {
      if (s.gc) collected = true;
      else pending.add(s.node);
    } else if (s.kind === 'gc' && pending.size > 0) {
      pending.clear();
      collected = true;
    }
    if (!collected) continue;
    out.add(leading ? 'leading' : 'leaderless');
    if (steps.slice(Math.max(0, i - 3), i).some((p) => p.kind === 'fail')) out.add('failing');
  }
  return out;
}

/** mulberry32: a small seeded PRNG, so a seed replays its run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Weights = Array<[number, (r: () => number) => Step]>;

/** The steps before the garbage collector: seeds found then (FOUND) replay their runs with these. */
const WEIGHTS_1: Weights = [
  [5, (r) => ({ kind: 'spec', node: pick(r, NODES), request: Math.floor(r() * 5) * 4 })],
  [6, (r) => ({ kind: 'deliver', replica: r() < 0.5 ? 0 : 1 })],
  [2, (r) => ({ kind: 'cut', replica: r() < 0.5 ? 0 : 1, nodes: r() < 0.5 })],
  [2, (r) => ({ kind: 'restore', replica: r() < 0.5 ? 0 : 1 })],
  [6, () => ({ kind: 'run' })],
  [2, (r) => ({ kind: 'hold', ms: 5 + Math.floor(r() * 20) })],
  [1, (r) => ({ kind: 'lose', replica: r() < 0.5 ? 0 : 1 })],
  [1, () => ({ kind: 'fail-after-apply' })],
  [2, () => ({ kind: 'handover' })],
  [1, (r) => ({ kind: 'deleteNode', node: pick(r, NODES) })],
  [1, (r) => ({ kind: 'addNode', node: pick(r, NODES) })],
  [1, (r) => ({ kind: 'deleteNnc', node: pick(r, NODES) })],
  [1, (r) => ({ kind: 'time', ms: r() < 0.5 ? 5_000 : 61_000 })],
];

const TARGETS: WriteTarget[] = ['css-status', 'nnc-status', 'nnc'];

/**
 * With the garbage collector (issue 39): a Node's deletion is followed at
 * once by its NNC's half of the time, or by a later 'gc' pass; the Lease
 * holder may step down with nobody taking over; writes may be refused.
 */
const WEIGHTS_2: Weights = [
  [5, (r) => ({ kind: 'spec', node: pick(r, NODES), request: Math.floor(r() * 5) * 4 })],
  [6, (r) => ({ kind: 'deliver', replica: r() < 0.5 ? 0 : 1 })],
  [2, (r) => ({ kind: 'cut', replica: r() < 0.5 ? 0 : 1, nodes: r() < 0.5 })],
  [2, (r) => ({ kind: 'restore', replica: r() < 0.5 ? 0 : 1 })],
  [6, () => ({ kind: 'run' })],
  [2, (r) => ({ kind: 'hold', ms: 5 + Math.floor(r() * 20) })],
  [1, (r) => ({ kind: 'lose', replica: r() < 0.5 ? 0 : 1 })],
  [1, () => ({ kind: 'fail-after-apply' })],
  [
    2,
    (r) => ({
      kind: 'fail',
      target: pick(r, TARGETS),
      status: r() < 0.5 ? 500 : 503,
      times: 1 + Math.floor(r() * 3),
    }),
  ],
  [2, () => ({ kind: 'handover' })],
  [1, () => ({ kind: 'resign' })],
  [2, (r) => ({ kind: 'deleteNode', node: pick(r, NODES), gc: r() < 0.5 })],
  [1, () => ({ kind: 'gc' })],
  [1, (r) => ({ kind: 'addNode', node: pick(r, NODES) })],
  [1, (r) => ({ kind: 'deleteNnc', node: pick(r, NODES) })],
  [1, (r) => ({ kind: 'time', ms: r() < 0.5 ? 5_000 : 61_000 })],
];

/**
 * With one record per Node incarnation (issue 53): a spec that releases
 * addresses, a write applied whose answer is lost (the release of a
 * deleted Node's NNC among them), a leader that leads again after its own
 * term, a Node re-registered under its name at once.
 */
const WEIGHTS_3: Weights = [
  ...WEIGHTS_2.slice(1), // its first, 'spec', with releases below
  [
    5,
    (r) => ({
      kind: 'spec',
      node: pick(r, NODES),
      request: Math.floor(r() * 5) * 4,
      release: r() < 0.3 ? 1 + Math.floor(r() * 4) : 0,
    }),
  ],
  [2, (r) => ({ kind: 'lose-answer', target: pick(r, ['nnc-status', 'nnc'] as const) })],
  [1, () => ({ kind: 'relead' })],
  [1, (r) => ({ kind: 'reregister', node: pick(r, NODES), gc: r() < 0.5 })],
];

/** The step generators: 1 before the garbage collector, 2 with it, 3 (the default) with issue 53's steps. */
export type Generation = 1 | 2 | 3;
const GENERATIONS: Record<Generation, Weights> = { 1: WEIGHTS_1, 2: WEIGHTS_2, 3: WEIGHTS_3 };

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

export function stepsFor(seed: number, count: number, generation: Generation = 3): Step[] {
  const weights = GENERATIONS[generation];
  const r = prng(seed);
  const total = weights.reduce((s, [w]) => s + w, 0);
  const out: Step[] = [];
  for (let i = 0; i < count; i++) {
    let x = r() * total;
    for (const [w, make] of weights) {
      if ((x -= w) < 0) {
        out.push(make(r));
        break;
      }
    }
  }
  return out;
}

export async function apply(world: World, s: Step): Promise<void> {
  const r = 'replica' in s ? world.replicas[s.replica]! : undefined;
  switch (s.kind) {
    case 'spec':
      return world.setSpec(s.node, s.request, s.release ?? 0);
    case 'deliver':
      return world.deliver(r!);
    case 'cut':
      return world.cut(r!, s.nodes ?? true);
    case 'restore':
      return world.restore(r!);
    case 'run':
      return world.run();
    case 'hold':
      return world.holdNextStatusWrite(s.ms);
    case 'lose':
      r!.loseNext = true;
      return;
    case 'fail-after-apply':
      world.server.faults.inject({
        verb: 'update',
        resource: NNC_PLURAL,
        subresource: 'status',
        status: 500,
        afterCommit: true,
      });
      return;
    case 'handover':
      return world.handover();
    case 'resign':
      await world.resign();
      return;
    case 'deleteNode':
      return world.deleteNode(s.node, s.gc ?? false);
    case 'addNode':
      return world.addNode(s.node);
    case 'deleteNnc':
      return world.deleteNnc(s.node);
    case 'gc':
      return world.gc();
    case 'fail':
      return world.failWrites(s.target, s.status, s.times);
    case 'time':
      return world.longWait(s.ms);
    case 'lose-answer':
      return world.loseAnswer(s.target);
    case 'relead':
      return world.relead();
    case 'reregister':
      await world.deleteNode(s.node, s.gc ?? false);
      return world.addNode(s.node);
  }
}

/**
 * What is wrong with the cluster now (empty: nothing): an address on two
 * NNCs, an address of a Node the world deleted on another node's NNC
 * before that Node's grace is over (world.ts, NodeDeletion; its own node's
 * NNC, terminating or recreated, may hold it), or an address gone from an
 * NNC's status whose id its spec never released (shared/DESIGN.md, "Address
 * ownership, stated once").
 */
export async function violations(world: World): Promise<string[]> {
  const nncs = await world.nncs();
  const out = world.observe(nncs);
  const held = holders(nncs);
  for (const [ip, names] of held)
    if (names.length > 1) out.push(`${ip} held by [${names.join(', ')}]`);
  for (const d of world.deletions)
    for (const ip of d.addresses)
      for (const name of held.get(ip) ?? [])
        if (name !== d.node)
          out.push(
            `${ip} of ${d.node} (Node deleted at ${secs(d.at)}, kept until ${secs(d.until)}) on ${name} at ${secs(world.clock.now())}`,
          );
  return out;
}

/** A time of the world's clock, as seconds since it started. */
function secs(t: number): string {
  return `${(t - EPOCH) / 1000}s`;
}

/** Faults stop; both replicas see everything; time passes: what has not converged. */
export async function converge(world: World): Promise<string[]> {
  world.server.faults.clear();
  for (const r of world.replicas) r.loseNext = false;
  if (!world.replicas.some((r) => r.holds)) await world.handover();
  // The garbage collector runs too: what it has left (a Node re-registered
  // under a new uid: its NNC names the old one) is deleted now; no Node
  // changes after this, so one pass is enough.
  await world.gc();
  let left: string[] = [];
  for (let round = 0; round < 12; round++) {
    if (process.env.INTERLEAVE_DEBUG) console.log('converge', round);
    for (const r of world.replicas) await world.restore(r);
    await world.longWait(round < 2 ? 2_000 : 61_000);
    for (const r of world.replicas) r.fulfiller.resync();
    await world.run();
    left = await unconverged(world);
    if (left.length === 0) return [];
  }
  return left;
}

async function unconverged(world: World): Promise<string[]> {
  const [nncs, nodes] = await Promise.all([world.nncs(), world.nodes()]);
  const names = new Set(nodes.map((n) => n.metadata!.name!));
  const out: string[] = [];
  for (const o of nncs) {
    if (!names.has(o.metadata.name)) {
      out.push(`${o.metadata.name}: NNC of a deleted Node`);
      continue;
    }
    // Addresses are released only when the spec names them (ipsNotInUse): more is converged.
    const want = o.spec?.requestedIPCount ?? 0;
    const have = dynamicContainers(o)[0]?.ipAssignments?.length ?? 0;
    if (have < want) out.push(`${o.metadata.name}: ${have} of ${want} addresses`);
  }
  for (const n of names)
    if (!nncs.some((o: NodeNetworkConfig) => o.metadata.name === n)) out.push(`${n}: no NNC`);
  return out;
}

export interface ExploreOptions {
  /** How many steps a seed makes (24). */
  steps?: number;
  /** These steps instead of the seed's. */
  fixture?: Step[];
  /** The step generator (3). */
  generation?: Generation;
}

/** Runs one seed: the first violation found (or a failure to converge), else undefined. */
export async function explore(
  seed: number,
  { steps = 24, fixture, generation = 3 }: ExploreOptions = {},
): Promise<string | undefined> {
  const world = await World.start();
  try {
    for (const n of NODES.slice(0, 3)) await world.addNode(n);
    for (const r of world.replicas) await world.restore(r);
    await world.handover();
    await world.run();
    const plan = fixture ?? stepsFor(seed, steps, generation);
    for (const [i, s] of plan.entries()) {
      if (process.env.INTERLEAVE_DEBUG) console.log(i, JSON.stringify(s));
      await apply(world, s);
      await world.idle();
      const bad = await violations(world);
      if (bad.length > 0)
        return `seed ${seed} step ${i} ${JSON.stringify(s)}: ${bad.slice(0, 3).join('; ')}`;
    }
    const left = await converge(world);
    const bad = await violations(world);
    if (bad.length > 0)
      return `seed ${seed} after the faults stopped: ${bad.slice(0, 3).join('; ')}`;
    if (left.length > 0) return `seed ${seed} did not converge: ${left.join('; ')}`;
    return undefined;
  } finally {
    await world.stop();
  }
}
