// One round for one node is ONE PUT of its whole NIC with If-Match:
//   NIC as last read/written ─ planNic(add, remove) ─ PUT ─ LRO ─ re-read ─ container
// 412, or an operation ARM canceled as superseded by a later one: re-read
// and recompute (bounded, together). SubnetIsFull (HTTP 400 or a failed
// LRO): the subnet is reported full, the usage re-read, and the round tried
// again with what still fits, then with no additions; never more than three
// PUTs for one full round, so nothing loops hot (the fulfiller's backoff
// spaces rounds). Azure's caps (256 per NIC, 256 per VM, the virtual
// network's) are counted before the PUT and, when ARM reports one, not
// retried: the node is told why (NodeSetupError → a Warning Event) and the
// limit counted. What another writer removed is put back in the same PUT
// (restore.ts, removal-audit.ts).
import type { NetworkInterface } from '@azure/arm-network';
import { heldContainer } from './container.ts';
import type { PodSubnetFacts } from './container.ts';
import type { NicRef } from './nic-api.ts';
import { armErrorKind, nicLabel } from './nic-api.ts';
import type { NicDirectory } from './nic-directory.ts';
import { planNic } from './nic-plan.ts';
import type { NodeNics } from './node-nics.ts';
import type { RemovalAudit } from './removal-audit.ts';
import type { ScaleSetPolicies } from './scale-set-policy.ts';
import type { PodSubnets } from './pod-subnets.ts';
import { missingConfigs, Restoration } from './restore.ts';
import type { BackendCounters } from './stats.ts';
import type { FamilyChange, HeldContainer, NodeRef } from '../fulfiller/backend.ts';
import { NodeSetupError, SubnetFullError } from '../fulfiller/backend.ts';

export interface NicRoundsOptions {
  directory: NicDirectory;
  podSubnets: PodSubnets;
  nics: NodeNics;
  audit: RemovalAudit;
  /** Uniform scale sets' upgrade policies (their nodes are refused unless Manual). */
  scaleSets: ScaleSetPolicies;
  counters: BackendCounters;
  newName: () => string;
  /** 412s in a row before a round gives up (the fulfiller backs off). */
  preconditionRetries: number;
  /** Drops all this process knows of the node. */
  forget: (node: string) => void;
}

/** One round's change of the node's IPv4 pod addresses on its NIC (one family: backend.ts). */
export type NicChange = Omit<FamilyChange, 'family'>;

/** What the NIC holds after the round, as the fulfiller's ApplyResult has it for one family. */
export interface NicResult {
  held: HeldContainer;
  short: boolean;
  lost?: string[];
}

export class NicRounds {
  private readonly directory: NicDirectory;
  private readonly podSubnets: PodSubnets;
  private readonly nics: NodeNics;
  private readonly audit: RemovalAudit;
  private readonly scaleSets: ScaleSetPolicies;
  private readonly counters: BackendCounters;
  private readonly newName: () => string;
  private readonly preconditionRetries: number;
  private readonly forget: (node: string) => void;

  constructor(options: NicRoundsOptions) {
    this.directory = options.directory;
    this.podSubnets = options.podSubnets;
    this.nics = options.nics;
    this.audit = options.audit;
    this.scaleSets = options.scaleSets;
    this.counters = options.counters;
    this.newName = options.newName;
    this.preconditionRetries = options.preconditionRetries;
    this.forget = options.forget;
  }

  /** One round; a failure after a write may have landed leaves the node in doubt. */
  async apply(node: NodeRef, change: NicChange): Promise<NicResult> {
    try {
      const result = await this.round(node, change);
      this.nics.trust(node.name);
      return result;
    } catch (err) {
      // ARM refused the identity (a missing role assignment): the node says
      // why (a Warning Event) instead of a bare retry. A refused poll comes
      // after the write was accepted: the NIC is read afresh next time.
      if (armErrorKind(err) === 'forbidden') {
        this.nics.distrust(node.name);
        throw new NodeSetupError(
          'ArmForbidden',
          `node ${node.name}: ARM refused (403, check the role assignments): ${(err as Error).message}`,
        );
      }
      // A write may have landed whose answer never came: read the NIC afresh next time.
      if (!(err instanceof NodeSetupError || err instanceof SubnetFullError)) {
        this.nics.distrust(node.name);
      }
      throw err;
    }
  }

  private async round(node: NodeRef, change: NicChange): Promise<NicResult> {
    const found = await this.directory.lookup(node);
    // Before any write: a scale set whose upgrades would take the addresses away refuses.
    if (found.ref.kind === 'scale-set') await this.scaleSets.check(node, found.ref);
    const pod = this.podSubnets.of(found.podSubnetId);
    const subnet = await pod.get();
    await pod.refreshIfStale().catch((e: unknown) => this.podSubnets.readFailed('usage', e));
    let nic = await this.nics.roundNic(node, found, this.audit.isDisturbed(node.name));
    const remove = change.remove.map((r) => r.name);
    const known = (change.container?.ipAssignments ?? []).map((a) => a.name);
    // Another writer's removals: put back with their addresses, or lost and
    // replaced in the same write (restore.ts).
    const named = found.ref.kind !== 'scale-set';
    const fix = new Restoration([], named);
    let add = change.add;
    let short = false;
    let preconditions = 0;
    let fulls = 0;
    for (;;) {
      // The NIC as read now (after a 412 too): what it lacks of the NNC.
      fix.update(missingConfigs(nic, change.container, remove), named);
      // While the subnet is known full, ask for no more than it has free:
      // a node asking again costs no failing PUT. (Free count unknown: this
      // round's own retries ask what they computed; other rounds nothing.)
      const free = pod.free;
      const limit = pod.lifted
        ? free
        : !pod.full
          ? undefined
          : free !== undefined
            ? free
            : fulls > 0
              ? undefined
              : 0;
      const plan = planNic({
        nic,
        podSubnetId: found.podSubnetId,
        add: add + fix.replacements,
        remove,
        known,
        newName: this.newName,
        otherConfigs: found.otherConfigs,
        ...(limit !== undefined ? { limit } : {}),
        ...(fix.restore.length > 0 ? { restore: fix.restore } : {}),
      });
      if (plan.limited) short = true;
      if (plan.cap && plan.added.length === 0 && !plan.changed)
        this.capReached(node, nic, plan.cap);
      if (plan.createsPrimary && limit !== undefined && limit < 1) {
        throw new SubnetFullError(
          `pod subnet ${subnet.name} has no free address for node ${node.name}'s NC primary IP`,
        );
      }
      if (!plan.changed) {
        this.audit.settled(node, nic, [], fix.lost);
        return this.result(this.held(node, nic, subnet, found.nodeIP), short, fix);
      }
      try {
        const written = await this.nics.put(node, found.ref, plan.nic, nic.etag);
        this.nics.keep(node, written);
        const taken = plan.added.length + (plan.createsPrimary ? 1 : 0) + plan.restored.length;
        this.counters.count(pod, taken, plan.removed.length);
        this.audit.settled(node, written, fix.restore, fix.lost);
        return this.result(this.held(node, written, subnet, found.nodeIP), short, fix);
      } catch (err) {
        const kind = armErrorKind(err);
        // A restored address ARM has given to another NIC: lost; the rest tried again.
        if (fix.refused(err)) continue;
        if (kind === 'not-found') this.notFound(node, found.ref, err);
        if (kind === 'limit') {
          this.capReached(
            node,
            nic,
            /Machine/.test((err as { code?: string }).code ?? '') ? 'vm' : 'nic',
          );
        }
        const reread = kind === 'precondition-failed' || kind === 'superseded';
        if (reread && preconditions++ < this.preconditionRetries) {
          if (kind === 'superseded') this.counters.superseded();
          else this.counters.preconditionFailed();
          nic = await this.nics.reread(node, found.ref);
          continue;
        }
        if (kind !== 'subnet-full' && kind !== 'vnet-full') throw err;
        this.counters.subnetFull();
        pod.markFull();
        short = true;
        fulls++;
        // The virtual network's cap: no address anywhere in it, nothing new this round.
        if (kind === 'vnet-full') {
          this.counters.limitReached('vnet');
          fulls = Math.max(fulls, 2);
        }
        // A read sent after this refusal, not one in flight from before it.
        await pod.refreshAfter().catch((e: unknown) => this.podSubnets.readFailed('usage', e));
        nic = await this.nics.reread(node, found.ref);
        // Undefined: the usage is unknown (its read refused); the answer alone must do.
        const free = pod.free;
        if (plan.createsPrimary && ((free !== undefined && free < 1) || fulls >= 3)) {
          throw new SubnetFullError(
            `pod subnet ${subnet.name} has no free address for node ${node.name}'s NC primary IP`,
          );
        }
        if (fulls >= 3) return this.result(this.held(node, nic, subnet, found.nodeIP), short, fix);
        // Second try: what still fits (fewer than the first; half of it when the
        // usage is unknown); third: nothing new.
        const fits =
          free === undefined
            ? Math.floor(plan.added.length / 2)
            : free - (plan.createsPrimary ? 1 : 0);
        const fresh = fulls === 1 ? Math.min(plan.added.length - 1, fits) : 0;
        add = plan.adopted.length + Math.max(0, fresh);
      }
    }
  }

  /**
   * The round's answer: what the NIC holds, and the addresses its status
   * lists that are proven gone (lost, reported with an Event by the audit):
   * the fulfiller may drop just those (ApplyResult.lost).
   */
  private result(held: HeldContainer, short: boolean, fix: Restoration): NicResult {
    const lost = fix.lost.map((l) => l.ip);
    return { held, short, ...(lost.length > 0 ? { lost } : {}) };
  }

  private notFound(node: NodeRef, ref: NicRef, err: unknown): never {
    this.forget(node.name);
    this.directory.drop(node);
    throw new NodeSetupError(
      'NicNotFound',
      `node ${node.name}: NIC ${nicLabel(ref)} is gone (${(err as Error).message})`,
    );
  }

  /** A cap leaves no room for one more address: say so on the node, count it, no write. */
  private capReached(node: NodeRef, nic: NetworkInterface, cap: 'nic' | 'vm'): never {
    this.counters.limitReached(cap);
    const what =
      cap === 'nic'
        ? `NIC ${nic.name} holds ${nic.ipConfigurations?.length ?? 0} ipConfigurations, Azure's limit per NIC is 256`
        : `its VM's NICs hold 256 private IP addresses, Azure's limit per VM`;
    throw new NodeSetupError(
      'IpConfigurationLimit',
      `node ${node.name}: no more pod IPs fit: ${what}`,
    );
  }

  private held(node: NodeRef, nic: NetworkInterface, subnet: PodSubnetFacts, nodeIP?: string) {
    const held = heldContainer(nic, subnet, nodeIP);
    if (!held) throw new Error(`node ${node.name}: NIC ${nic.name} has no NC primary address yet`);
    return held;
  }
}
