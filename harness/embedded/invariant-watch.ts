// The embedded run's watch on the invariants: every interval it samples the
// cluster straight from the local API server's store (every pod, the
// workload's and any a person made with kubectl; the NNCs; the
// ClusterSubnetStates), says each violation that became persistent on
// stderr and in the log, and moves the progress bar. Beside the shared
// invariants (src/sim/invariants.ts) it checks that no address a Running
// pod on node A reports in status.podIPs is in the status of another node
// B's NNC: the address of a deleted node (its NNC terminating, or already
// gone) must not go to another node while a pod bound to it still runs
// with it (docs/design/fulfiller.md#quarantine). And, in a run of more than
// IPv4, that every Running pod reports one address of each of the run's
// families and none of another (ip-family.ts): never half a dual-stack pod.
import { GROUP, CSS_PLURAL, DEFAULT_NAMESPACE, NNC_PLURAL } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import type { Logger } from '../../src/log/logger.ts';
import {
  persistentViolations,
  podIps,
  violationKey,
  type PodSnapshot,
  type Violation,
  type ViolationKind,
} from '../../src/sim/invariants.ts';
import type { ProgressBar } from '../../src/sim/report/progress.ts';
import type { ApiServer } from '../apiserver/server.ts';
import type { IpFamily } from '../../src/nnc/family.ts';
import { familyProblem } from './ip-family.ts';
import { ClusterSampler, type SubnetStateSnapshot } from './sampler.ts';

/** The kind of a pod's address found on another node's NNC (not one of the shared kinds). */
export const POD_IP_ON_OTHER_NNC = 'pod-ip-on-other-nnc' as ViolationKind;

/**
 * Addresses a Running pod bound to node A reports in status.podIPs that the
 * status of another node's NNC lists (terminating NNCs included). Pure.
 */
export function podIpsOnOtherNncs(
  pods: readonly PodSnapshot[],
  nncs: readonly NodeNetworkConfig[],
): Violation[] {
  const nncsOf = new Map<string, string[]>();
  for (const nnc of nncs)
    for (const nc of nnc.status?.networkContainers ?? [])
      for (const a of nc.ipAssignments ?? [])
        nncsOf.set(a.ip, [...(nncsOf.get(a.ip) ?? []), nnc.metadata.name]);
  const out: Violation[] = [];
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (pod.spec?.hostNetwork === true || !node || pod.status?.phase !== 'Running') continue;
    const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
    for (const ip of podIps(pod)) {
      const others = [...new Set(nncsOf.get(ip) ?? [])].filter((n) => n !== node).sort();
      if (others.length === 0) continue;
      out.push({
        kind: POD_IP_ON_OTHER_NNC,
        pods: [key],
        nncs: others,
        ip,
        node,
        message: `pod ${key} runs on ${node} with ${ip}, which the status of NNC ${others.join(', ')} (another node) lists`,
      });
    }
  }
  return out;
}

/** The kind of a Running pod without one address of each of the run's families. */
export const POD_ADDRESS_FAMILIES = 'pod-address-families' as ViolationKind;

/**
 * Running pods (not host-network) whose status.podIPs are not one address
 * of each of `families` (a pod without any is running-without-ip). Pure.
 */
export function podFamilyViolations(
  pods: readonly PodSnapshot[],
  families: readonly IpFamily[],
): Violation[] {
  const out: Violation[] = [];
  for (const pod of pods) {
    if (pod.spec?.hostNetwork === true || pod.status?.phase !== 'Running') continue;
    const ips = podIps(pod);
    const problem = ips.length === 0 ? undefined : familyProblem(ips, families);
    if (problem === undefined) continue;
    const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
    out.push({
      kind: POD_ADDRESS_FAMILIES,
      pods: [key],
      ...(pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
      ip: ips.join(','),
      message: `pod ${key} runs with ${ips.join(', ')}: ${problem}`,
    });
  }
  return out;
}

export class InvariantWatch {
  readonly sampler = new ClusterSampler();
  private previousOwn: Violation[] = [];
  private readonly seenOwn = new Set<string>();
  /** When the workload started: the samples' time zero. */
  readonly t0 = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly deps: {
    server: Pick<ApiServer, 'objects'>;
    bar: ProgressBar;
    err: { write(text: string): unknown };
    log: Logger;
    /** Whether some fulfiller replica leads now (chaos kills them; default: always). */
    fulfillerLeads?: () => boolean;
    /** The run's address families (default IPv4): each Running pod has one address of each. */
    families?: readonly IpFamily[];
    /** Told of every snapshot's NNCs (the report's addresses by family). */
    onNncs?: (nncs: readonly NodeNetworkConfig[]) => void;
  };

  constructor(deps: InvariantWatch['deps']) {
    this.deps = deps;
  }

  /** Seconds since t0. */
  elapsed(): number {
    return (Date.now() - this.t0) / 1000;
  }

  /** One sample now; each violation that became persistent is said at once. */
  sample(): void {
    const { server, bar, err, log } = this.deps;
    const snap = {
      pods: server.objects('', 'pods') as PodSnapshot[],
      nncs: server.objects(GROUP, NNC_PLURAL, DEFAULT_NAMESPACE) as unknown as NodeNetworkConfig[],
      subnets: server.objects(GROUP, CSS_PLURAL, DEFAULT_NAMESPACE) as SubnetStateSnapshot[],
    };
    this.deps.onNncs?.(snap.nncs);
    const current = [
      ...podIpsOnOtherNncs(snap.pods, snap.nncs),
      ...podFamilyViolations(snap.pods, this.deps.families ?? [4]),
    ];
    const own = persistentViolations(this.previousOwn, current).filter((v) => {
      const key = violationKey(v);
      if (this.seenOwn.has(key)) return false;
      this.seenOwn.add(key);
      return true;
    });
    this.previousOwn = current;
    // Reported with the shared ones (the report's violations, the run's exit code).
    this.sampler.violations.push(...own);
    const fulfillerLeads = this.deps.fulfillerLeads?.() ?? true;
    for (const v of [...this.sampler.sample(this.elapsed(), snap, fulfillerLeads), ...own]) {
      bar.done();
      err.write(`INVARIANT VIOLATED: ${v.message}\n`);
      log.error('invariant violated', { ...v });
    }
  }

  /** Samples now and every `intervalMs`, moving the bar through `durationSeconds` of `label`. */
  start(intervalMs: number, durationSeconds: number, label: string): void {
    this.sample();
    this.timer = setInterval(() => {
      this.sample();
      const elapsed = this.elapsed();
      if (elapsed <= durationSeconds) this.deps.bar.update(elapsed, durationSeconds, label);
    }, intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
