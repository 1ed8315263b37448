// The chaos timeline of a run, drawn from the seed before anything starts,
// so the same seed, rate, nodes and duration give the same actions at the
// same moments (a failing run can be replayed). Pure.
//
// Within the first 85 % of the run (the rest lets the cluster settle):
// - every sidecar is killed (SIGKILL) at least once and restarted after a
//   short random pause, more often the higher the rate;
// - the fulfiller replicas are killed at least three times: the leader, then
//   the standby, then the leader again (so each replica dies at least once
//   and leadership moves both ways), each restarted after a pause;
// - the API server drops watches (all, or those of one resource) at least
//   five times, and forgets its history at least once, each time followed by
//   a drop so that the resuming watches get 410 Gone;
// - the standby fulfiller is cut off the API server (its watches ended, new
//   connections refused for 1 to 2 s: replica-proxy.ts) at least three
//   times, once 3 s after each kill of the leader, just before the dead
//   leader's Lease expires, so that the standby takes the Lease while its
//   watches restart (docs/design/fulfiller.md#high-availability);
// - Nodes are deleted through the API at least twice, in the first 60 % of
//   the run, while their kubelet and sidecar keep running (`kubectl delete
//   node` during an outage), and re-registered 2 to 6 s later, as a live
//   kubelet's node status loop does; the first deletion, and about a third
//   of the others, with both fulfiller replicas killed first (no fulfiller
//   runs when the garbage collector deletes the NNC). Drawn after every
//   other action, so a seed's other actions are the same as before.
import { seededRandom } from '../../../src/sim/random.ts';

export type FulfillerRole = 'leader' | 'standby';

export type ChaosAction =
  | { atMs: number; kind: 'drop-watches'; resource?: string }
  | { atMs: number; kind: 'compact' }
  | { atMs: number; kind: 'kill-sidecar'; node: string; downMs: number }
  | { atMs: number; kind: 'kill-fulfiller'; role: FulfillerRole; downMs: number }
  | { atMs: number; kind: 'cut-standby'; downMs: number }
  | {
      atMs: number;
      kind: 'delete-node';
      node: string;
      /** How long the Node stays deleted before its kubelet registers it again. */
      downMs: number;
      /** Both fulfiller replicas are killed first and the Node deleted while neither runs. */
      fulfillersDown: boolean;
    };

export interface ChaosPlanInput {
  seed: number;
  rate: number;
  durationMs: number;
  nodes: readonly string[];
  /**
   * Delete Nodes while their kubelet and sidecar run (the garbage collector
   * then deletes their NNCs). On in every chaos run unless turned off
   * (CHAOS_NODE_DELETIONS=0, to tell their effects from the rest's).
   */
  nodeDeletions?: boolean;
}

/** Resources whose watches a single drop may target (else every watch). */
export const WATCHED_RESOURCES = [
  'pods',
  'nodes',
  'nodenetworkconfigs',
  'clustersubnetstates',
  'leases',
] as const;

/**
 * When the standby is cut off after a leader kill: shortly before the dead
 * leader's Lease expires (CHAOS_LEASE_TIMINGS in host.ts: 4 s), so the
 * standby takes it while its watches restart.
 */
export const CUT_AFTER_LEADER_KILL_MS = 3000;

/** The share of the run chaos acts in; the rest lets the cluster settle. */
export const CHAOS_WINDOW = 0.85;

/** Node deletions happen in the first 60 % of the run (re-registered 2 to 6 s later). */
export const NODE_DELETION_WINDOW = 0.6;

/** How many of each action a run gets: at least the quality bar's, more with rate and time. */
export function actionCounts(
  rate: number,
  durationMs: number,
): {
  sidecarKills: number;
  fulfillerKills: number;
  watchDrops: number;
  compactions: number;
  standbyCuts: number;
  nodeDeletions: number;
} {
  if (rate <= 0)
    return {
      sidecarKills: 0,
      fulfillerKills: 0,
      watchDrops: 0,
      compactions: 0,
      standbyCuts: 0,
      nodeDeletions: 0,
    };
  const minutes = durationMs / 60_000;
  return {
    // per node: one per 1/rate minutes (rate 0.2: one per 5 min), at least one
    sidecarKills: Math.max(1, Math.round(rate * minutes)),
    fulfillerKills: Math.max(3, Math.round(rate * minutes * 3)),
    watchDrops: Math.max(5, Math.round(rate * minutes * 30)),
    compactions: Math.max(1, Math.round(rate * minutes * 3)),
    standbyCuts: Math.max(3, Math.round(rate * minutes * 6)),
    nodeDeletions: Math.max(2, Math.round(rate * minutes * 3)),
  };
}

export function planChaos(input: ChaosPlanInput): ChaosAction[] {
  const random = seededRandom(input.seed);
  const counts = actionCounts(input.rate, input.durationMs);
  const window = input.durationMs * CHAOS_WINDOW;
  // Not in the first 5 %: the cluster comes up then.
  const at = (): number =>
    Math.round(input.durationMs * 0.05 + random() * (window - input.durationMs * 0.05));
  const actions: ChaosAction[] = [];
  for (const node of input.nodes) {
    for (let k = 0; k < counts.sidecarKills; k += 1) {
      actions.push({ atMs: at(), kind: 'kill-sidecar', node, downMs: Math.round(random() * 1000) });
    }
  }
  // Fulfiller kills spread out (a failover takes a lease duration): one per slot.
  const slots = counts.fulfillerKills;
  for (let k = 0; k < slots; k += 1) {
    const from = input.durationMs * 0.05 + ((window - input.durationMs * 0.05) * k) / slots;
    const width = (window - input.durationMs * 0.05) / slots;
    actions.push({
      atMs: Math.round(from + random() * width * 0.8),
      kind: 'kill-fulfiller',
      role: k % 3 === 1 ? 'standby' : 'leader',
      downMs: Math.round(random() * 2000),
    });
  }
  // The standby cut off just before it would take the Lease after each
  // leader kill (for 1 to 2 s: it leads while its watches restart), then at
  // random moments.
  const cutsAfterKills = actions
    .filter((a) => a.kind === 'kill-fulfiller' && a.role === 'leader')
    .map((a) => Math.min(Math.round(window), a.atMs + CUT_AFTER_LEADER_KILL_MS));
  for (let k = 0; k < Math.max(counts.standbyCuts, cutsAfterKills.length); k += 1) {
    actions.push({
      atMs: cutsAfterKills[k] ?? at(),
      kind: 'cut-standby',
      downMs: 1000 + Math.round(random() * 1000),
    });
  }
  for (let k = 0; k < counts.watchDrops; k += 1) {
    const pick = Math.floor(random() * (WATCHED_RESOURCES.length + 1));
    const resource = WATCHED_RESOURCES[pick];
    actions.push(
      resource
        ? { atMs: at(), kind: 'drop-watches', resource }
        : { atMs: at(), kind: 'drop-watches' },
    );
  }
  for (let k = 0; k < counts.compactions; k += 1) {
    const t = at();
    actions.push({ atMs: t, kind: 'compact' });
    // Resumes after a compaction get 410 Gone: make every watch resume.
    actions.push({ atMs: t + 1, kind: 'drop-watches' });
  }
  // Node deletions last (the draws above stay those of earlier versions),
  // early enough that the Node is back and its pods served before the end.
  const deletionEnd = input.durationMs * NODE_DELETION_WINDOW;
  const deletions = input.nodeDeletions ? counts.nodeDeletions : 0;
  for (let k = 0; k < deletions && input.nodes.length > 0; k += 1) {
    const node = input.nodes[Math.floor(random() * input.nodes.length)] ?? input.nodes[0]!;
    const atMs = Math.round(
      input.durationMs * 0.05 + random() * (deletionEnd - input.durationMs * 0.05),
    );
    const downMs = 2000 + Math.round(random() * 4000);
    const fulfillersDown = random() < 0.35 || k === 0;
    actions.push({ atMs, kind: 'delete-node', node, downMs, fulfillersDown });
  }
  return actions.sort((a, b) => a.atMs - b.atMs);
}
