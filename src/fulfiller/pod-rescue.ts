// Pods are the record of last resort (docs/design/fulfiller.md#pods-as-the-last-record).
// Each node's addresses are recorded by its NNC, by the NNC kept terminating
// as a quarantine, or by a restore annotation (its successor's, its Node's).
// A person who removes those finalizers by hand leaves none of them: a new
// leader then finds the node's pods running with addresses no record holds,
// free to hand out to another node. So a new term reads the pods before its
// first allocation: an address a running pod reports, inside the backend's
// subnets and held by no record, is the pod's node's again (kept for it and
// written back into its NNC, or quarantined when its Node is gone).
// Pure: which addresses are orphaned; `keepRescued` puts them in the ledger.
import type { Logger } from '../log/logger.ts';
import { addressFamily, containerFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { IpBackend } from './backend.ts';
import type { NodeBook } from './node-book.ts';

/** The addresses a pod bound to a node reports (`status.podIPs`). */
export interface PodAddresses {
  node: string;
  ips: string[];
}

/**
 * Per node, the addresses its pods hold that nothing records: inside the
 * backend's subnets (`ours`), in use by no status, kept record or claim
 * (`recorded`). An address two nodes' pods report goes to neither: which
 * one holds it cannot be told, and the fulfiller reports it instead.
 */
export function orphanedAddresses(
  pods: readonly PodAddresses[],
  recorded: (ip: string) => boolean,
  ours: (ip: string) => boolean,
): { byNode: Map<string, string[]>; contested: string[] } {
  const owner = new Map<string, string | null>();
  for (const p of pods)
    for (const ip of p.ips) {
      if (recorded(ip) || !ours(ip)) continue;
      const seen = owner.get(ip);
      if (seen === undefined) owner.set(ip, p.node);
      else if (seen !== p.node) owner.set(ip, null);
    }
  const byNode = new Map<string, string[]>();
  const contested: string[] = [];
  for (const [ip, node] of owner) {
    if (node === null) {
      contested.push(ip);
      continue;
    }
    const list = byNode.get(node);
    if (list) list.push(ip);
    else byNode.set(node, [ip]);
  }
  return { byNode, contested };
}

/**
 * Kept containers with rescued addresses added, each to the container of
 * its family (the first when none is: a node whose successor's restore
 * annotation is known but whose pods report more addresses than it names),
 * each under a new id.
 */
export function withRescued<C extends { ipAssignments?: Array<{ name: string; ip: string }> }>(
  containers: readonly C[],
  ips: readonly string[],
  newId: () => string,
): C[] {
  const out = structuredClone(containers) as C[];
  if (out.length === 0) return out;
  for (const ip of ips) {
    const into =
      out.find((nc) => containerFamily(nc as unknown as NetworkContainer) === addressFamily(ip)) ??
      out[0]!;
    into.ipAssignments = [...(into.ipAssignments ?? []), { name: newId(), ip }];
  }
  return out;
}

/**
 * Keeps every orphaned address for its node in the book, before anything
 * is allocated: in a container the backend rebuilds, or added to what is
 * kept for the node already. The node's lifecycle then merges it into its
 * NNC (`create`, `restore`) or quarantines it. Backends without `rebuild`
 * (Azure: the NIC still holds them) are left to their own record.
 */
export function keepRescued(
  pods: readonly PodAddresses[],
  deps: { book: NodeBook; backend: IpBackend; log: Logger; newId: () => string },
): void {
  const { book, backend, log } = deps;
  if (!backend.rebuild) return;
  const valid = backend.validAddress?.bind(backend) ?? (() => false);
  const { byNode, contested } = orphanedAddresses(pods, (ip) => book.addresses.isUsed(ip), valid);
  if (contested.length > 0)
    log.error('pods of two nodes report the same address, which no record holds', {
      addresses: contested.slice(0, 5),
      count: contested.length,
    });
  for (const [name, ips] of byNode) {
    const record = book.recordForPods(name);
    let containers: NetworkContainer[];
    if (record.kept) containers = withRescued(record.kept.containers, ips, deps.newId);
    else {
      const rebuilt = backend.rebuild({ name }, ips);
      if (!rebuilt) {
        log.error('addresses pods hold cannot be kept: no address left for a primary IP', {
          node: name,
          addresses: ips.length,
        });
        continue;
      }
      containers = rebuilt;
    }
    book.keep(record, { containers, why: record.kept?.why ?? 'rescued' });
    log.warn('addresses running pods hold were in no record: kept for their node', {
      node: name,
      addresses: ips.length,
      nodeExists: record.nodeInfo() !== undefined,
    });
  }
}
