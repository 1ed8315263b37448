// A pod's status, read the same way by every part: a pod in a terminal phase
// has let go of its sandbox (and its addresses); the addresses it reports are
// `status.podIP` and `status.podIPs`, merged. The API is untrusted: every
// field is optional.

/** Phases after which a pod's containers never run again. */
export const FINISHED_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed']);

export interface PodStatusLike {
  spec?: { nodeName?: string; hostNetwork?: boolean } | null;
  status?: {
    phase?: string;
    podIP?: string;
    podIPs?: ({ ip?: string } | null)[] | null;
  } | null;
}

/** The pod is Succeeded or Failed. */
export function isFinished(pod: PodStatusLike | undefined): boolean {
  return FINISHED_PHASES.has(pod?.status?.phase ?? '');
}

/** Every address in the pod's status, `podIP` and `podIPs` merged, without duplicates. */
export function reportedIps(pod: PodStatusLike): string[] {
  const ips = new Set<string>();
  if (pod.status?.podIP) ips.add(pod.status.podIP);
  for (const entry of pod.status?.podIPs ?? []) if (entry?.ip) ips.add(entry.ip);
  return [...ips];
}

/**
 * A pod that holds addresses: on a node, not host-network, not finished.
 * Finished pods keep `podIP` in their status after the CNI released it (as
 * kubelet leaves it), so they hold nothing.
 */
export function holdsAddresses(pod: PodStatusLike): boolean {
  return pod.spec?.hostNetwork !== true && Boolean(pod.spec?.nodeName) && !isFinished(pod);
}
