// The scheduler of the interleaving explorer (README "High availability"): a seed picks
// a sequence of steps over a World (world.ts); after every step the cluster
// is checked: no address on two NNCs, no quarantined address on an NNC of
// another node. Once the faults stop, every NNC must converge: each Node's
// NNC holds what its spec asks for, none is left of a deleted Node.
import type { NodeNetworkConfig } from '../../../src/nnc/types.ts';
import { dynamicContainers } from '../../../src/nnc/types.ts';
import { addressesOf } from '../../../src/fulfiller/ledger.ts';
import type { NetworkContainer } from '../../../src/nnc/types.ts';
import { holders, World } from './world.ts';

export const NODES = ['n1', 'n2', 'n3', 'n4'];

export type Step =
  | { kind: 'spec'; node: string; request: number }
  | { kind: 'deliver'; replica: number }
  | { kind: 'cut'; replica: number; nodes?: boolean }
  | { kind: 'restore'; replica: number }
  | { kind: 'run' }
  | { kind: 'hold'; ms: number }
  | { kind: 'lose'; replica: number }
  | { kind: 'fail-after-apply' }
  | { kind: 'handover' }
  | { kind: 'deleteNode'; node: string }
  | { kind: 'addNode'; node: string }
  | { kind: 'deleteNnc'; node: string }
  | { kind: 'time'; ms: number };

/**
 * The review's case (as in ha.process.test.ts; README "High availability"),
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

const WEIGHTS: Array<[number, (r: () => number) => Step]> = [
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

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

export function stepsFor(seed: number, count: number): Step[] {
  const r = prng(seed);
  const total = WEIGHTS.reduce((s, [w]) => s + w, 0);
  const out: Step[] = [];
  for (let i = 0; i < count; i++) {
    let x = r() * total;
    for (const [w, make] of WEIGHTS) {
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
      return world.setSpec(s.node, s.request);
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
        resource: 'nodenetworkconfigs',
        subresource: 'status',
        status: 500,
        afterCommit: true,
      });
      return;
    case 'handover':
      return world.handover();
    case 'deleteNode':
      return world.deleteNode(s.node);
    case 'addNode':
      return world.addNode(s.node);
    case 'deleteNnc':
      return world.deleteNnc(s.node);
    case 'time':
      return world.longWait(s.ms);
  }
}

/** What is wrong with the cluster now (empty: nothing). */
export async function violations(world: World): Promise<string[]> {
  const [nncs, quarantine] = await Promise.all([world.nncs(), world.quarantine()]);
  const out: string[] = [];
  const held = holders(nncs);
  for (const [ip, names] of held)
    if (names.length > 1) out.push(`${ip} held by [${names.join(', ')}]`);
  for (const q of quarantine)
    for (const ip of addressesOf(q.containers as NetworkContainer[]))
      for (const name of held.get(ip) ?? [])
        if (name !== q.node) out.push(`${ip} quarantined for ${q.node} but on ${name}`);
  return out;
}

/** Faults stop; both replicas see everything; time passes: what has not converged. */
export async function converge(world: World): Promise<string[]> {
  world.server.faults.clear();
  for (const r of world.replicas) r.loseNext = false;
  if (!world.replicas.some((r) => r.holds)) await world.handover();
  let left: string[] = [];
  for (let round = 0; round < 12; round++) {
    if (process.env.INTERLEAVE_DEBUG) console.log('converge', round);
    for (const r of world.replicas) await world.restore(r);
    await world.longWait(round < 4 ? 2_000 : 61_000);
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

/** Runs one seed: the first violation found (or a failure to converge), else undefined. */
export async function explore(
  seed: number,
  steps = 24,
  fixture?: Step[],
): Promise<string | undefined> {
  const world = await World.start();
  try {
    for (const n of NODES.slice(0, 3)) await world.addNode(n);
    for (const r of world.replicas) await world.restore(r);
    await world.handover();
    await world.run();
    const plan = fixture ?? stepsFor(seed, steps);
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
