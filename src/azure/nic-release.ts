// A deleted node's release: ONE PUT of its NIC without the pod
// ipConfigurations of either family (nic-plan.ts planRelease), retried on
// 412 (bounded).
// Releases never need an address and always go through; a NIC already gone
// (the VM went with the node) has had its addresses freed by Azure.
import type { NetworkContainer } from '../nnc/types.ts';
import { armErrorKind } from './nic-api.ts';
import { planRelease } from './nic-plan.ts';
import type { NodeNics } from './node-nics.ts';
import type { PodSubnets } from './pod-subnets.ts';
import type { BackendCounters } from './stats.ts';
import type { NodeRef } from '../fulfiller/backend.ts';

export interface NicReleaseDeps {
  podSubnets: PodSubnets;
  nics: NodeNics;
  counters: BackendCounters;
  /** 412s in a row before the release gives up. */
  preconditionRetries: number;
  /** Drops all this process knows of the node. */
  forget: (node: string) => void;
}

/** Frees everything the node's NIC holds (secondaries and NC primaries), then forgets the node. */
export async function releaseNic(
  deps: NicReleaseDeps,
  node: NodeRef,
  containers: readonly NetworkContainer[],
): Promise<void> {
  const { nics, podSubnets, counters } = deps;
  const ref = await nics.locate(node, containers);
  // No NIC (the VM went with the node): Azure freed its addresses with it.
  if (!ref) return deps.forget(node.name);
  let nic = await nics.reread(node, ref).catch((err: unknown) => {
    if (armErrorKind(err) === 'not-found') return undefined;
    throw err;
  });
  for (let attempt = 0; nic; attempt++) {
    const subnet = nics.subnetOf(nic);
    const plan = subnet ? planRelease(nic, subnet) : undefined;
    if (!subnet || !plan || plan.removed.length === 0) break;
    try {
      await nics.put(node, ref, plan.nic, nic.etag);
      for (const [family, freed] of plan.byFamily) {
        const pod = family === 4 ? podSubnets.of(subnet) : podSubnets.peek(subnet, family);
        if (pod) counters.count(pod, 0, freed);
      }
      break;
    } catch (err) {
      const kind = armErrorKind(err);
      if (kind === 'not-found') break;
      if (kind !== 'precondition-failed' || attempt >= deps.preconditionRetries) throw err;
      counters.preconditionFailed();
      nic = await nics.reread(node, ref);
    }
  }
  deps.forget(node.name);
}
