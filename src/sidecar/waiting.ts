// Why the sidecar is not ready yet, in words. Until the API server has
// answered the first list of pods, NNC and CSS, and until the node's NNC
// exists with a status, a scaler and a dynamic network container, the
// sidecar waits. Those are normal stages of a start (the fulfiller creates
// the NNC, then writes its status), not errors: they are said on an info
// line (again at most once a minute while nothing changes) and in /readyz's
// body, never as a Warning. Only an NNC that is malformed (a status, scaler
// or container list of the wrong type) is invalid, and left to the monitor,
// which warns about it.
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers, isTerminating } from '../nnc/types.ts';

export type NncReadiness =
  { kind: 'usable' } | { kind: 'waiting'; reason: string } | { kind: 'invalid'; reason: string };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the node's NNC (undefined: none yet) lets the sidecar do. Pure. */
export function nncReadiness(
  nnc: NodeNetworkConfig | undefined,
  namespace: string,
  name: string,
): NncReadiness {
  const what = `NodeNetworkConfig ${namespace}/${name}`;
  if (nnc === undefined) {
    return { kind: 'waiting', reason: `waiting for ${what} to be created (by the fulfiller)` };
  }
  const status: unknown = nnc.status;
  if (status === undefined || status === null) {
    return { kind: 'waiting', reason: `waiting for the fulfiller to write the status of ${what}` };
  }
  if (!isObject(status)) return { kind: 'invalid', reason: 'status is not an object' };
  if (status.scaler === undefined || status.scaler === null) {
    return { kind: 'waiting', reason: `waiting for status.scaler of ${what}` };
  }
  if (!isObject(status.scaler))
    return { kind: 'invalid', reason: 'status.scaler is not an object' };
  const containers = status.networkContainers;
  if (containers !== undefined && containers !== null && !Array.isArray(containers)) {
    return { kind: 'invalid', reason: 'status.networkContainers is not a list' };
  }
  if (dynamicContainers(nnc).length === 0) {
    return {
      kind: 'waiting',
      reason: `waiting for a dynamic network container in status.networkContainers of ${what}`,
    };
  }
  return { kind: 'usable' };
}

/**
 * Why no new address is handed out because of the NNC itself: it is being
 * deleted, or it is gone after the node had one. Its addresses are then the
 * node's only through a quarantine or a successor still being made, and one
 * handed out now could outlive a lost record (docs/design/fulfiller.md#pods-as-the-last-record).
 * Undefined: assign. Pure.
 */
export function nncGoneReason(
  nnc: NodeNetworkConfig | undefined,
  hadOne: boolean,
  namespace: string,
  name: string,
): string | undefined {
  const what = `NodeNetworkConfig ${namespace}/${name}`;
  if (nnc === undefined)
    return hadOne ? `${what} is gone: waiting for the fulfiller to make it again` : undefined;
  if (isTerminating(nnc)) return `${what} is being deleted: waiting for its successor`;
  return undefined;
}

/** Why the informers have not all listed yet; undefined once they have. Pure. */
export function listReason(
  unsynced: readonly string[],
  lastError: string | undefined,
): string | undefined {
  if (unsynced.length === 0) return undefined;
  return (
    `waiting for the API server's first list of ${unsynced.join(', ')}` +
    (lastError ? ` (last error: ${lastError})` : '')
  );
}

/**
 * Says the same reason at most once per `everyMs`, a new one at once. Returns
 * whether to log now; a reason of undefined (ready) resets it.
 */
export class WaitNotice {
  private last: { reason: string; at: number } | undefined;
  private readonly everyMs: number;
  constructor(everyMs = 60_000) {
    this.everyMs = everyMs;
  }
  shouldSay(reason: string | undefined, now: number): boolean {
    if (reason === undefined) {
      this.last = undefined;
      return false;
    }
    if (this.last && this.last.reason === reason && now - this.last.at < this.everyMs) return false;
    this.last = { reason, at: now };
    return true;
  }
}

/** The informers as waitReason looks at them. */
export interface WatchedInputs {
  pods: { synced: boolean };
  nnc: { synced: boolean; list(): readonly { metadata?: { name?: string } }[] };
  css: { synced: boolean };
}

export interface WaitReason {
  reason: string;
  /**
   * Whether it is worth an info line: not for a malformed NNC (the monitor
   * warns about it) nor for the moment between a usable NNC and readiness.
   */
  say: boolean;
}

/** What a sidecar that is not ready waits for, from its informers' state. */
export function waitReason(
  informers: WatchedInputs | undefined,
  lastError: string | undefined,
  namespace: string,
  nodeName: string,
): WaitReason {
  if (informers === undefined) return { reason: 'starting', say: false };
  const watches = { pods: informers.pods, nnc: informers.nnc, css: informers.css };
  const unsynced = Object.entries(watches)
    .filter(([, w]) => !w.synced)
    .map(([name]) => name);
  const listing = listReason(unsynced, lastError);
  if (listing) return { reason: listing, say: true };
  const nnc = informers.nnc.list().find((o) => o.metadata?.name === nodeName) as
    NodeNetworkConfig | undefined;
  const r = nncReadiness(nnc, namespace, nodeName);
  if (r.kind === 'waiting') return { reason: r.reason, say: true };
  if (r.kind === 'invalid') {
    return {
      reason: `NodeNetworkConfig ${namespace}/${nodeName} is invalid: ${r.reason}`,
      say: false,
    };
  }
  return { reason: 'waiting for the IP store to follow the NNC', say: false };
}

/** What the sidecar's readiness is derived from, each read from the part that owns it. */
export interface ReadinessState {
  /** The sidecar's stop has begun. */
  stopping: boolean;
  /** The monitor has its whole picture: the watches listed, a usable NNC the store followed. */
  monitorReady: boolean;
  /** The watches, once they run; undefined while the sidecar starts. */
  watches: WatchedInputs | undefined;
  /** The last error a watch reported. */
  lastWatchError: string | undefined;
}

/** Why the sidecar is not ready (the health checks and the wait log); undefined: ready. Pure. */
export function whyNotReady(
  state: ReadinessState,
  namespace: string,
  nodeName: string,
): WaitReason | undefined {
  if (state.stopping) return { reason: 'stopping', say: false };
  if (state.monitorReady) return undefined;
  return waitReason(state.watches, state.lastWatchError, namespace, nodeName);
}
