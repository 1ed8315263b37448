// The store follows the pods (docs/decisions/0017): the stateful side of pod-plan.ts. It is told
// about the pod watch (each cache after the first list, lost and regained
// sync) and about every inventory sync, runs the plan against the store, and
// carries it out with the store's guarded operations (adopt, reclaim), so a
// plan made on a view a CNI request has since changed undoes nothing. Pod
// changes coalesce into one check COALESCE_MS later; an inventory sync is checked
// at once (before any CNI request can take what it added); a timer checks
// at the next suspect's end of grace and at least every `sweepMs`. Time
// comes from an injected rxjs scheduler.
//
// Until both the pod watch has listed and the inventory has followed an NNC
// (and so the first adoption has run), `notReady()` says why: the node API
// hands out no IP before, so a lost store double-assigns nothing.
import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';
import type { Logger } from '../log/logger.ts';
import {
  liveOnNode,
  planPodFollowing,
  podKey,
  type Conflict,
  type LeakReason,
  type PodView,
  type Suspect,
} from './pod-plan.ts';
import type { IpRecord, NodeIpStore } from './types.ts';
import { isAdopted } from './types.ts';
import { errorText } from '../log/error-text.ts';

export const DEFAULT_LEAK_GRACE_MS = 60_000;
/**
 * Pod changes and CNI assignments within this long make one check: a busy
 * node's pass (about 0.7 ms with 250 IPs and 240 pods) runs at most ~20
 * times a second. Inventory syncs are checked at once regardless.
 */
export const COALESCE_MS = 50;

/** What an operator must hear about: the sidecar logs them, records Events, counts them. */
export type PodNotice =
  | { type: 'reclaimed'; record: IpRecord; reason: LeakReason; absentMs: number }
  | { type: 'adopted'; record: IpRecord; previous: IpRecord }
  | { type: 'conflict'; conflict: Conflict };

export interface SuspectView {
  pod: string;
  ip: string;
  id: string;
  reason: LeakReason;
  absentSeconds: number;
  reclaimInSeconds: number;
}

export interface PodFollowingStatus {
  graceSeconds: number;
  podsListed: boolean;
  podsSynced: boolean;
  inventorySynced: boolean;
  suspects: SuspectView[];
}

export interface PodFollowerOptions {
  store: NodeIpStore;
  nodeName: string;
  graceMs?: number;
  logger: Logger;
  scheduler?: SchedulerLike;
  /** Longest time between two checks; default the grace, at least 10 s. */
  sweepMs?: number;
  notify?: (notice: PodNotice) => void;
}

export interface PodFollower {
  /** The pods on the node: every cache of the pod watch, after its first list. */
  pods(list: readonly PodView[]): void;
  /** The pod watch lost its sync (an error) or has it (a list completed). */
  podsSynced(synced: boolean): void;
  /** The inventory followed an NNC: what it added may be a pod's address. */
  inventorySynced(): void;
  /** The CNI changed the store (an IP assigned): checked soon after. */
  storeChanged(): void;
  /** One pass now. */
  check(): void;
  /**
   * A CNI DEL for pod ns/name named no assignment the store knows - after a
   * lost store, the pod's address was adopted under an unknown sandbox. When
   * the pod is no longer live on the node, its adopted IPs are released now
   * (else they wait for the grace: the DEL may be an old sandbox's while the
   * current one still uses the address). Returns what was released.
   */
  releaseAdopted(podNamespace: string, podName: string): IpRecord[];
  /** Why no IP may be handed out yet; undefined once the store follows the pods. */
  notReady(): string | undefined;
  status(): PodFollowingStatus;
  stop(): void;
}

export function followPods(options: PodFollowerOptions): PodFollower {
  const { store, nodeName, logger: log, notify = () => {} } = options;
  const scheduler = options.scheduler ?? asyncScheduler;
  const graceMs = Math.max(0, options.graceMs ?? DEFAULT_LEAK_GRACE_MS);
  const sweepMs = Math.max(1, options.sweepMs ?? Math.max(graceMs, 10_000));
  let pods: readonly PodView[] | undefined;
  let synced = false;
  let inventory = false;
  let stopped = false;
  let absentSince = new Map<string, number>();
  let suspects: Suspect[] = [];
  let timer: Subscription | undefined;
  let soonTimer: Subscription | undefined;
  // A conflict is reported once, until it is gone.
  let reported = new Set<string>();

  const arm = (nextAt: number | undefined): void => {
    timer?.unsubscribe();
    if (stopped) return;
    const now = scheduler.now();
    const at = Math.min(nextAt ?? Number.POSITIVE_INFINITY, now + sweepMs);
    timer = scheduler.schedule(() => check(), Math.max(0, at - now));
  };

  const carryOut = (plan: ReturnType<typeof planPodFollowing>, now: number): void => {
    for (const a of plan.adopt) {
      const result = store.adopt(a);
      if (result.outcome === 'adopted') {
        notify({ type: 'adopted', record: result.record, previous: result.previous });
      } else if (result.outcome !== 'held') {
        log.debug('adoption skipped: the store changed meanwhile', { ip: a.ip, ...result });
      }
    }
    const current = new Set<string>();
    for (const conflict of plan.conflicts) {
      const k = `${conflict.ip}|${conflict.pods.join(',')}|${conflict.reason}`;
      current.add(k);
      if (!reported.has(k)) notify({ type: 'conflict', conflict });
    }
    reported = current;
    for (const s of plan.reclaim) {
      const pod = s.record.pod;
      if (pod === undefined) continue;
      // The whole assignment goes (a dual-stack pod's other address too): each is told.
      const freed = store.reclaim(s.record.id, pod);
      for (const r of freed?.ips ?? []) {
        const record = r.id === s.record.id ? s.record : { ...r, state: s.record.state, pod };
        notify({ type: 'reclaimed', record, reason: s.reason, absentMs: now - s.since });
      }
    }
  };

  const soon = (): void => {
    if (stopped || soonTimer !== undefined) return;
    soonTimer = scheduler.schedule(() => {
      soonTimer = undefined;
      check();
    }, COALESCE_MS);
  };

  function check(): void {
    if (stopped) return;
    const now = scheduler.now();
    let nextAt: number | undefined;
    if (pods !== undefined && inventory) {
      try {
        const plan = planPodFollowing({
          records: store.list(),
          pods,
          nodeName,
          podsSynced: synced,
          absentSince,
          now,
          graceMs,
        });
        absentSince = plan.absentSince;
        suspects = plan.suspects;
        nextAt = plan.nextAt;
        carryOut(plan, now);
      } catch (err) {
        // A store that cannot write is the NNC follower's health problem; try again later.
        log.error('following the pods failed', { error: errorText(err) });
      }
    }
    arm(nextAt);
  }

  return {
    pods(list) {
      const first = pods === undefined;
      pods = list;
      if (first) check();
      else soon();
    },
    podsSynced(value) {
      if (value === synced) return;
      const lost = pods !== undefined && !value;
      const back = pods !== undefined && value;
      synced = value;
      if (lost) {
        // A lost watch is not a deleted pod: no clock runs until it lists again.
        absentSince = new Map();
        suspects = [];
        log.warn('pod watch lost: leaked IPs are not reclaimed until it lists again');
      } else if (back) {
        log.info('pod watch listed again: leak clocks start over');
      }
      check();
    },
    inventorySynced() {
      inventory = true;
      check();
    },
    storeChanged: soon,
    check,
    releaseAdopted(podNamespace, podName) {
      if (pods === undefined || liveOnNode(pods, nodeName, podNamespace, podName)) return [];
      const released: IpRecord[] = [];
      for (const r of store.list(['Assigned'])) {
        const pod = r.pod;
        if (!isAdopted(pod) || pod?.podName !== podName || pod.podNamespace !== podNamespace)
          continue;
        if (store.reclaim(r.id, pod) !== undefined) released.push(r);
      }
      return released;
    },
    notReady() {
      if (pods === undefined) return "waiting for the pod watch's first list";
      if (!inventory) return 'waiting for the first NodeNetworkConfig';
      return undefined;
    },
    status() {
      const now = scheduler.now();
      return {
        graceSeconds: graceMs / 1000,
        podsListed: pods !== undefined,
        podsSynced: synced,
        inventorySynced: inventory,
        suspects: suspects.map((s) => ({
          pod: s.record.pod ? podKey(s.record.pod.podNamespace, s.record.pod.podName) : '?',
          ip: s.record.ip,
          id: s.record.id,
          reason: s.reason,
          absentSeconds: Math.max(0, now - s.since) / 1000,
          reclaimInSeconds: Math.max(0, s.reclaimAt - now) / 1000,
        })),
      };
    },
    stop() {
      stopped = true;
      timer?.unsubscribe();
      soonTimer?.unsubscribe();
      timer = undefined;
      soonTimer = undefined;
    },
  };
}
