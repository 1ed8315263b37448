// What the node IP store should do to follow the pods on the node, decided
// purely from the store's records, the pod watch's cache and the clock
// (follow-pods.ts carries it out):
// - adopt: an address a non-terminal pod reports in status.podIPs that the
//   store does not hold as Assigned to it (Available, PendingRelease,
//   PendingProgramming, or held by a pod that is gone) - so a lost store
//   hands out no running pod's address;
// - conflicts: two pods claiming one address, an address the store (the
//   NNC) does not have, an address another live pod holds - reported, and
//   the address is held, never given out;
// - suspects and reclaims: an Assigned IP whose pod has not been on the
//   node (absent from the watch, or Succeeded/Failed) for the grace, counted
//   from when it was first seen so and only while the pod watch is synced
//   (a lost watch is not a deleted pod: the clocks restart after it).
import { ipSortKey, isIpAddress } from './address.ts';
import type { Holder, IpRecord } from './types.ts';
import { isAdopted } from './types.ts';
import { isFinished } from '../kube/pod-status.ts';

/** The fields of a pod the plan reads; everything optional, the API is untrusted. */
export interface PodView {
  metadata?: { name?: string; namespace?: string; creationTimestamp?: unknown } | null;
  spec?: { nodeName?: string; hostNetwork?: boolean } | null;
  status?: { phase?: string; podIP?: string; podIPs?: ({ ip?: string } | null)[] | null } | null;
}

export type LeakReason = 'pod-deleted' | 'pod-completed';

export interface Suspect {
  /** The Assigned record whose pod is not on the node. */
  record: IpRecord;
  reason: LeakReason;
  /** Scheduler ms since when it has been seen so, without a break. */
  since: number;
  /** When it is reclaimed unless its pod comes back. */
  reclaimAt: number;
}

export interface Adoption {
  ip: string;
  podName: string;
  podNamespace: string;
  /** The gone pod's assignment it is taken over from. */
  from?: Holder;
}

export interface Conflict {
  ip: string;
  /** `namespace/name` of the pods claiming it. */
  pods: string[];
  reason: string;
}

export interface PodPlanInput {
  /** Every record of the store. */
  records: readonly IpRecord[];
  pods: readonly PodView[];
  nodeName: string;
  /** The pod watch has listed and is live: only then may anything be reclaimed. */
  podsSynced: boolean;
  /** When each assignment (assignmentKey) was first seen without its pod. */
  absentSince: ReadonlyMap<string, number>;
  now: number;
  graceMs: number;
}

export interface PodPlan {
  adopt: Adoption[];
  conflicts: Conflict[];
  /** Suspects whose grace is over: to be released now. */
  reclaim: Suspect[];
  /** Suspects still within the grace. */
  suspects: Suspect[];
  /** The clocks to keep for the next plan. */
  absentSince: Map<string, number>;
  /** When the next suspect's grace ends, if any. */
  nextAt?: number;
}

/** The identity of one assignment: the IP, its pod interface and sandbox. */
export function assignmentKey(record: IpRecord): string {
  return `${record.id}|${record.pod?.podInterfaceID ?? ''}|${record.pod?.infraContainerID ?? ''}`;
}

export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function key(pod: PodView): string | undefined {
  const name = pod?.metadata?.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const ns = pod.metadata?.namespace;
  return podKey(typeof ns === 'string' && ns !== '' ? ns : 'default', name);
}

/**
 * A pod's key and creation time, which never change for a pod, worked out
 * once per pod object: the watch hands the same objects to every pass until
 * a pod changes, and parsing each creation time at each pass was a quarter
 * of a pass's time.
 */
const identities = new WeakMap<PodView, { key: string | undefined; at: number }>();

function identity(pod: PodView): { key: string | undefined; at: number } {
  let id = identities.get(pod);
  if (id === undefined) {
    id = { key: key(pod), at: created(pod) };
    identities.set(pod, id);
  }
  return id;
}

/**
 * One key per address however it is written: a dotted IPv4 address is its
 * own key (Node's isIP refuses leading zeros), IPv6 goes through ipSortKey.
 * A pass keys ~750 addresses: this keeps it well under a millisecond.
 */
function addressKey(ip: string): string {
  if (!ip.includes(':')) return ip;
  const k = ipSortKey(ip);
  if (!k.startsWith(V4_MAPPED)) return k;
  // ::ffff:a.b.c.d is the IPv4 address a.b.c.d.
  return [24, 26, 28, 30].map((i) => parseInt(k.slice(i, i + 2), 16)).join('.');
}

const V4_MAPPED = '00000000000000000000ffff';

/** Every address the pod reports (podIP and podIPs), as keys to the text. */
function claimed(pod: PodView): Map<string, string> {
  const out = new Map<string, string>();
  const add = (ip: unknown): void => {
    if (isIpAddress(ip)) out.set(addressKey(ip), ip);
  };
  add(pod.status?.podIP);
  if (Array.isArray(pod.status?.podIPs)) for (const entry of pod.status.podIPs) add(entry?.ip);
  return out;
}

function created(pod: PodView): number {
  const t = pod.metadata?.creationTimestamp;
  const ms = t instanceof Date ? t.getTime() : typeof t === 'string' ? Date.parse(t) : NaN;
  return Number.isFinite(ms) ? ms : Number.MAX_SAFE_INTEGER;
}

/** True when pod ns/name is on the node and not finished, as far as `pods` says. */
export function liveOnNode(
  pods: readonly PodView[],
  nodeName: string,
  namespace: string,
  name: string,
): boolean {
  return pods.some((pod) => {
    if (key(pod) !== podKey(namespace, name)) return false;
    const node = pod.spec?.nodeName;
    if (typeof node === 'string' && node !== '' && node !== nodeName) return false;
    return !isFinished(pod);
  });
}

export function planPodFollowing(input: PodPlanInput): PodPlan {
  const { nodeName, now, graceMs } = input;
  // Pods on this node by key; the live ones (not finished) separately.
  const onNode = new Map<string, { pod: PodView; at: number }>();
  for (const pod of input.pods) {
    const { key: k, at } = identity(pod);
    if (k === undefined) continue;
    const node = pod.spec?.nodeName;
    if (typeof node === 'string' && node !== '' && node !== nodeName) continue;
    onNode.set(k, { pod, at });
  }
  const live = (k: string): boolean => {
    const pod = onNode.get(k)?.pod;
    return pod !== undefined && !isFinished(pod);
  };
  const holderOf = (r: IpRecord): string | undefined =>
    r.pod && r.pod.podName !== '' ? podKey(r.pod.podNamespace, r.pod.podName) : undefined;

  const byAddress = new Map<string, IpRecord>();
  const realByPod = new Map<string, IpRecord[]>();
  for (const r of input.records) {
    byAddress.set(addressKey(r.ip), r);
    if (r.state !== 'Assigned' || isAdopted(r.pod)) continue;
    const h = holderOf(r);
    if (h === undefined) continue;
    const held = realByPod.get(h);
    if (held === undefined) realByPod.set(h, [r]);
    else held.push(r);
  }

  // Claims of live, pod-network pods. A pod whose store record from a CNI
  // request is not among the addresses it reports has a stale status (its
  // newer sandbox got that record's address): its claims wait.
  const claims = new Map<string, { ip: string; pods: string[] }>();
  const order: { k: string; pod: PodView; at: number }[] = [];
  for (const [k, { pod, at }] of onNode)
    if (live(k) && pod.spec?.hostNetwork !== true) order.push({ k, pod, at });
  order.sort((a, b) => a.at - b.at || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  for (const { k, pod } of order) {
    const addresses = claimed(pod);
    if (addresses.size === 0) continue;
    const real = realByPod.get(k) ?? [];
    if (real.some((r) => !addresses.has(addressKey(r.ip)))) continue;
    for (const [address, ip] of addresses) {
      const c = claims.get(address) ?? { ip, pods: [] };
      c.pods.push(k);
      claims.set(address, c);
    }
  }

  const adopt: Adoption[] = [];
  const conflicts: Conflict[] = [];
  const takenOver = new Set<string>();
  for (const [k, c] of claims) {
    const record = byAddress.get(k);
    const holder = record?.state === 'Assigned' ? holderOf(record) : undefined;
    if (c.pods.length > 1) {
      conflicts.push({ ip: c.ip, pods: c.pods, reason: `claimed by ${c.pods.length} pods` });
    }
    if (record === undefined) {
      conflicts.push({ ip: c.ip, pods: c.pods, reason: 'not in the NodeNetworkConfig' });
      continue;
    }
    if (holder !== undefined && c.pods.includes(holder)) continue; // held by a claimant
    const [first, ...rest] = c.pods as [string, ...string[]];
    const [ns, name] = [first.slice(0, first.indexOf('/')), first.slice(first.indexOf('/') + 1)];
    if (record.state !== 'Assigned') {
      adopt.push({ ip: record.ip, podNamespace: ns, podName: name });
    } else if (holder === undefined || !live(holder)) {
      takenOver.add(record.id);
      adopt.push({
        ip: record.ip,
        podNamespace: ns,
        podName: name,
        from: {
          podInterfaceID: record.pod?.podInterfaceID ?? '',
          infraContainerID: record.pod?.infraContainerID ?? '',
        },
      });
    } else {
      conflicts.push({
        ip: c.ip,
        pods: [first, ...rest],
        reason: `held in the store by live pod ${holder}`,
      });
    }
  }

  // Leak suspects: only while the pod watch is synced; the clocks restart after.
  const absentSince = new Map<string, number>();
  const reclaim: Suspect[] = [];
  const suspects: Suspect[] = [];
  let nextAt: number | undefined;
  if (input.podsSynced) {
    for (const r of input.records) {
      if (r.state !== 'Assigned' || takenOver.has(r.id)) continue;
      const holder = holderOf(r);
      if (holder !== undefined && live(holder)) continue;
      const k = assignmentKey(r);
      const since = input.absentSince.get(k) ?? now;
      absentSince.set(k, since);
      const suspect: Suspect = {
        record: r,
        reason: holder !== undefined && onNode.has(holder) ? 'pod-completed' : 'pod-deleted',
        since,
        reclaimAt: since + graceMs,
      };
      if (now >= suspect.reclaimAt) reclaim.push(suspect);
      else {
        suspects.push(suspect);
        nextAt = Math.min(nextAt ?? Number.POSITIVE_INFINITY, suspect.reclaimAt);
      }
    }
  }
  conflicts.sort((a, b) => {
    const [x, y] = [ipSortKey(a.ip), ipSortKey(b.ip)];
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return {
    adopt,
    conflicts,
    reclaim,
    suspects,
    absentSince,
    ...(nextAt !== undefined ? { nextAt } : {}),
  };
}
