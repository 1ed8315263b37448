// The cluster's safety invariants (pods, IPs and NNCs together; the node IP
// store's own are in src/ipstore/invariants.ts), which the embedded harness
// and the benches check during every run. Pure: it
// takes a snapshot of the pods and NNCs and returns what is wrong as data, so
// the harness decides how loudly to fail. The rules are the ones a CNI
// user would notice: two pods sharing an IP, a Running pod without one, a pod
// IP its node's NNC does not back, an IP marked for release while a pod
// still holds it, and one address in the status of two NNCs (two nodes
// would hand it out).
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { restoreRecord } from '../nnc/types.ts';
import { holdsAddresses, reportedIps } from '../kube/pod-status.ts';

/** The parts of a pod the invariants read (a V1Pod fits). */
export interface PodSnapshot {
  metadata?: { name?: string; namespace?: string; uid?: string };
  spec?: { nodeName?: string; hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string; podIPs?: { ip?: string }[] };
}

export type ViolationKind =
  | 'ip-held-twice'
  | 'running-without-ip'
  | 'ip-not-in-nnc'
  | 'held-ip-released'
  | 'address-on-two-nncs';

export interface Violation {
  kind: ViolationKind;
  /** `namespace/name` of the pod (or pods, for ip-held-twice; none for address-on-two-nncs). */
  pods: string[];
  /** The NNCs listing the address (address-on-two-nncs). */
  nncs?: string[];
  ip?: string;
  node?: string;
  /**
   * ip-not-in-nnc because the node has no NNC at all: a successor NNC is
   * made only once its predecessor is gone (a name cannot be reused
   * before), so a window without one is part of every replacement
   * (docs/design/fulfiller.md#nnc-lifecycle); a sampler counts it only when it lasts.
   */
  nncMissing?: true;
  message: string;
}

function podKey(pod: PodSnapshot): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
}

/** Every IP in the pod's status, `podIP` and `podIPs` merged, without duplicates. */
export const podIps: (pod: PodSnapshot) => string[] = reportedIps;

/** A pod that holds its IPs: on a node, not host-network, not finished (src/kube/pod-status.ts). */
export const holdsIps: (pod: PodSnapshot) => boolean = holdsAddresses;

/** What a node's NNC backs: every status IP, and those whose id is in spec.ipsNotInUse. */
interface NodeBacking {
  ips: Set<string>;
  released: Set<string>;
}

/**
 * What records a node's addresses: its NNC's status and, on a successor NNC
 * not restored yet, its restore annotation (the fulfiller keeps those in use
 * until the status holds them; docs/decisions/0030).
 */
function recordedContainers(nnc: NodeNetworkConfig): NetworkContainer[] {
  return [...(nnc.status?.networkContainers ?? []), ...(restoreRecord(nnc) ?? [])];
}

function backingByNode(nncs: readonly NodeNetworkConfig[]): Map<string, NodeBacking> {
  const out = new Map<string, NodeBacking>();
  for (const nnc of nncs) {
    const notInUse = new Set(nnc.spec?.ipsNotInUse ?? []);
    const backing: NodeBacking = { ips: new Set(), released: new Set() };
    for (const nc of recordedContainers(nnc)) {
      for (const a of nc.ipAssignments ?? []) {
        backing.ips.add(a.ip);
        if (notInUse.has(a.name)) backing.released.add(a.ip);
      }
    }
    out.set(nnc.metadata.name, backing);
  }
  return out;
}

/** Addresses listed in the status of more than one NNC. */
function sharedAddresses(nncs: readonly NodeNetworkConfig[]): Violation[] {
  const owners = new Map<string, Set<string>>();
  for (const nnc of nncs) {
    for (const nc of recordedContainers(nnc)) {
      for (const a of nc.ipAssignments ?? []) {
        const set = owners.get(a.ip) ?? new Set<string>();
        set.add(nnc.metadata.name);
        owners.set(a.ip, set);
      }
    }
  }
  const out: Violation[] = [];
  for (const [ip, set] of owners) {
    if (set.size < 2) continue;
    const names = [...set].sort();
    out.push({
      kind: 'address-on-two-nncs',
      pods: [],
      nncs: names,
      ip,
      message: `address ${ip} is in the status of ${names.length} NNCs: ${names.join(', ')}`,
    });
  }
  return out;
}

/** Checks the invariants over one snapshot; an empty list means all hold. */
export function checkClusterInvariants(
  pods: readonly PodSnapshot[],
  nncs: readonly NodeNetworkConfig[],
): Violation[] {
  const violations: Violation[] = sharedAddresses(nncs);
  const backing = backingByNode(nncs);
  const holders = new Map<string, string[]>();

  for (const pod of pods) {
    if (pod.spec?.hostNetwork === true) continue;
    const key = podKey(pod);
    const ips = podIps(pod);
    const node = pod.spec?.nodeName;
    if (pod.status?.phase === 'Running' && ips.length === 0) {
      violations.push({
        kind: 'running-without-ip',
        pods: [key],
        ...(node ? { node } : {}),
        message: `pod ${key} is Running without an IP`,
      });
    }
    if (!holdsIps(pod) || !node) continue;
    const nodeBacking = backing.get(node);
    for (const ip of ips) {
      holders.set(ip, [...(holders.get(ip) ?? []), key]);
      if (!nodeBacking?.ips.has(ip)) {
        violations.push({
          kind: 'ip-not-in-nnc',
          pods: [key],
          ip,
          node,
          ...(nodeBacking ? {} : { nncMissing: true as const }),
          message: nodeBacking
            ? `pod ${key} holds ${ip}, which NNC ${node} status does not list`
            : `pod ${key} holds ${ip}, but node ${node} has no NNC`,
        });
      } else if (nodeBacking.released.has(ip)) {
        violations.push({
          kind: 'held-ip-released',
          pods: [key],
          ip,
          node,
          message: `pod ${key} holds ${ip}, which NNC ${node} lists in spec.ipsNotInUse`,
        });
      }
    }
  }

  for (const [ip, keys] of holders) {
    if (keys.length > 1) {
      violations.push({
        kind: 'ip-held-twice',
        pods: [...keys].sort(),
        ip,
        message: `IP ${ip} is held by ${keys.length} pods: ${[...keys].sort().join(', ')}`,
      });
    }
  }
  return violations;
}

/** A stable identity for a violation, to compare snapshots. */
export function violationKey(v: Violation): string {
  return `${v.kind}|${v.ip ?? ''}|${v.pods.join(',')}|${(v.nncs ?? []).join(',')}`;
}

/**
 * The violations present in both of two consecutive snapshots. Pods and NNCs
 * come from separate watches, so one snapshot can catch a release half-way
 * through; a harness that fails only on persistent violations avoids those
 * false alarms while still catching every real one.
 */
export function persistentViolations(
  previous: readonly Violation[],
  current: readonly Violation[],
): Violation[] {
  const before = new Set(previous.map(violationKey));
  return current.filter((v) => before.has(violationKey(v)));
}
