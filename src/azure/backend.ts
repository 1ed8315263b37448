// The Azure backend: a node's pod IPs are secondary ipConfigurations on its
// NIC. One round for one node is ONE PUT of the whole NIC with If-Match:
//   NIC as last read/written ─ planNic(add, remove) ─ PUT ─ LRO ─ re-read ─ container
// 412: re-read and recompute (bounded). SubnetIsFull (HTTP 400 or a failed
// LRO): the subnet is reported full, the usage re-read, and the round tried
// again with what still fits, then with no additions; never more than three
// PUTs for one full round, so nothing loops hot (the fulfiller's backoff
// spaces rounds). Releases never need an address and always go through.
// The node's NIC is the VM's NIC in the pod subnet, or without
// --pod-subnet-id its primary NIC in its own subnet (nic-choice.ts); a VM
// without one is refused with NicNotInPodSubnet before any write. Each pod
// subnet in use has its own usage and CSS (pod-subnets.ts). Azure's
// caps (256 per NIC, 256 per VM, the virtual network's) are counted before
// the PUT and, when ARM reports one, not retried: the node is told why
// (NodeSetupError → a Warning Event) and the limit counted. A 403 on a read
// is reported and counted, never fatal: without the usage, the CSS follows
// what SubnetIsFull answers tell.
//
// Other writers (cloud-provider-azure's whole-NIC PUT from a stale read
// without If-Match; a scale-set reimage or model upgrade) may remove pod
// ipConfigurations the NNC still lists, and ARM frees their addresses. Each
// time the fulfiller asks needsRound (its resync, every minute) and the NIC
// list is older than `auditMs` (default 30 s), the NICs are listed again in
// the background; a node whose NIC, listed after our last write to it, lacks
// names its NNC lists is asked a round (BackendHooks.nodeNeedsRound): found
// within one resync plus one list. The round re-reads the NIC and puts them
// back with the same name and address (`Static`); an address ARM has given
// to another NIC meanwhile (`PrivateIPAddressInUse`), or any on a Uniform
// scale-set instance (its model cannot name an address), is lost: a Warning
// Event `IpConfigurationsRemovedByOthers`, a log line and
// `pool_monitor_arm_ipconfigs_removed_by_others_total{outcome}` say so.
import { randomUUID } from 'node:crypto';
import type { NetworkInterface } from '@azure/arm-network';
import type { Logger } from '../log/logger.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import { heldContainer } from './container.ts';
import type { PodSubnetFacts } from './container.ts';
import type { ArmMetricsSink } from './metrics.ts';
import { noArmMetrics } from './metrics.ts';
import type { NicApi, NicRef } from './nic-api.ts';
import { armErrorKind, nicLabel, nicRefOf, sameNicRef } from './nic-api.ts';
import { NicDirectory } from './nic-directory.ts';
import type { FoundNic } from './nic-directory.ts';
import { nicSubnetId } from './nic-choice.ts';
import { isManagedSecondary, planNic, planRelease } from './nic-plan.ts';
import { missingConfigs, Restoration } from './restore.ts';
import type { PodSubnet } from './pod-subnet.ts';
import { PodSubnets } from './pod-subnets.ts';
import type {
  ApplyResult,
  BackendHooks,
  IpBackend,
  NodeRef,
  PoolChange,
  SubnetInfo,
} from '../fulfiller/backend.ts';
import { NodeSetupError, SubnetFullError } from '../fulfiller/backend.ts';

export interface AzureBackendOptions {
  api: NicApi;
  /** Absent: each node's pod IPs go in its own NIC's subnet (node subnet layout). */
  podSubnetId?: string;
  metrics?: ArmMetricsSink;
  now?: () => number;
  newName?: () => string;
  /** 412s in a row before a round gives up (the fulfiller backs off). Default 5. */
  preconditionRetries?: number;
  usageRefreshMs?: number;
  fullHoldMs?: number;
  /** Shortest time between two NIC lists (default 60 s). */
  minRelistMs?: number;
  /** Where a failed background usage read is reported. */
  logger?: Logger;
  /** Usage reads while a subnet is full (default 5 s). */
  fullPollMs?: number;
  /** NICs are listed again (to find other writers' removals) when the list is this old (default 30 s). */
  auditMs?: number;
}

/** Counters of what the backend did, for tests and the embedded report. */
export interface AzureBackendStats {
  puts: number;
  preconditionFailed: number;
  subnetFull: number;
  allocated: number;
  released: number;
  /** ipConfigurations another writer removed that were put back with their address. */
  restored: number;
  /** ...that could not be (their address taken, or a scale-set instance). */
  lost: number;
}

export class AzureBackend implements IpBackend {
  readonly kind = 'azure';
  readonly stats: AzureBackendStats = {
    puts: 0,
    preconditionFailed: 0,
    subnetFull: 0,
    allocated: 0,
    released: 0,
    restored: 0,
    lost: 0,
  };
  readonly directory: NicDirectory;
  readonly podSubnets: PodSubnets;
  private readonly api: NicApi;
  private readonly podSubnetId: string | undefined;
  private readonly metrics: ArmMetricsSink;
  private readonly newName: () => string;
  private readonly preconditionRetries: number;
  /** Per node: the NIC as last read or written (its etag is the next If-Match). */
  private readonly nics = new Map<string, NetworkInterface>();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Nodes whose last round failed after a write may have landed. */
  private readonly doubtful = new Set<string>();
  /** Nodes whose NIC, listed after our last write, lacks what their NNC lists. */
  private readonly disturbed = new Set<string>();
  /** Per node: its Node and what its NNC lists, as last asked by needsRound. */
  private readonly watched = new Map<
    string,
    { node: NodeRef; container: NetworkContainer | undefined }
  >();
  /** Per node: when our last write to its NIC was answered. */
  private readonly writtenAt = new Map<string, number>();
  private hooks: BackendHooks | undefined;
  private readonly logger: Logger | undefined;
  private readonly now: () => number;
  private readonly auditMs: number;

  constructor(options: AzureBackendOptions) {
    this.api = options.api;
    this.podSubnetId = options.podSubnetId;
    this.metrics = options.metrics ?? noArmMetrics;
    this.newName = options.newName ?? randomUUID;
    this.preconditionRetries = options.preconditionRetries ?? 5;
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
    this.auditMs = options.auditMs ?? 30_000;
    this.directory = new NicDirectory({
      list: () => options.api.list(),
      listScaleSet: (rg, ss) => options.api.listScaleSet(rg, ss),
      ...(options.podSubnetId ? { podSubnetId: options.podSubnetId } : {}),
      ...(options.now ? { now: options.now } : {}),
      ...(options.minRelistMs !== undefined ? { minRelistMs: options.minRelistMs } : {}),
    });
    this.podSubnets = new PodSubnets({
      api: options.api,
      ...(options.now ? { now: options.now } : {}),
      ...(options.usageRefreshMs !== undefined ? { usageRefreshMs: options.usageRefreshMs } : {}),
      ...(options.fullHoldMs !== undefined ? { fullHoldMs: options.fullHoldMs } : {}),
      ...(options.fullPollMs !== undefined ? { fullPollMs: options.fullPollMs } : {}),
      onFreed: () => this.hooks?.addressesFreed(),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  attach(hooks: BackendHooks): void {
    this.hooks = hooks;
  }

  /** Stops the background usage polls. */
  stop(): void {
    this.podSubnets.stop();
  }

  /**
   * Reads the pod subnet and its usage (so subnets() has something to say)
   * and lists the NICs; without --pod-subnet-id, the subnets of the NICs
   * that already hold pod IPs.
   */
  async start(): Promise<void> {
    if (this.podSubnetId) await this.podSubnets.read(this.podSubnetId);
    // The NICs as they are: a predecessor's interrupted rounds show in needsRound().
    await this.directory.relist().catch((e: unknown) => this.podSubnets.readFailed('NIC list', e));
    if (!this.podSubnetId) {
      for (const id of this.directory.subnetsInUse()) await this.podSubnets.read(id);
    }
    this.podSubnets.started = true;
  }

  /** The pod subnets in use as last known (pod-subnets.ts). */
  subnets(): SubnetInfo[] {
    return this.podSubnets.info();
  }

  apply(node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    return this.serial(node.name, async () => {
      try {
        const result = await this.round(node, change);
        this.doubtful.delete(node.name);
        return result;
      } catch (err) {
        // ARM refused the identity (a missing role assignment): the node says
        // why (a Warning Event) instead of a bare retry. A refused poll comes
        // after the write was accepted: the NIC is read afresh next time.
        if (armErrorKind(err) === 'forbidden') {
          this.doubtful.add(node.name);
          this.nics.delete(node.name);
          throw new NodeSetupError(
            'ArmForbidden',
            `node ${node.name}: ARM refused (403, check the role assignments): ${(err as Error).message}`,
          );
        }
        // A write may have landed whose answer never came: read the NIC afresh next time.
        if (!(err instanceof NodeSetupError || err instanceof SubnetFullError)) {
          this.doubtful.add(node.name);
          this.nics.delete(node.name);
        }
        throw err;
      }
    });
  }

  /**
   * The node's NIC (as this process last wrote or listed it) holds managed
   * addresses its NNC does not list, or its last round failed so nobody can
   * tell: it needs a round, whatever its spec asks (docs/decisions/0019).
   */
  needsRound(node: NodeRef, container: NetworkContainer | undefined): boolean {
    if (this.doubtful.has(node.name) || this.disturbed.has(node.name)) return true;
    this.watched.set(node.name, { node, container });
    this.auditIfStale();
    if (this.removedByOthers(node, container)) {
      this.disturbed.add(node.name);
      return true;
    }
    const nic = this.nics.get(node.name) ?? this.directory.peek(node);
    if (!nic) return false;
    const listed = new Set((container?.ipAssignments ?? []).map((a) => a.name));
    const subnet = this.subnetOf(nic);
    return (nic.ipConfigurations ?? []).some(
      (c) => subnet && isManagedSecondary(c, subnet) && c.privateIPAddress && !listed.has(c.name!),
    );
  }

  /** Lists the NICs again in the background when the list is `auditMs` old. */
  private auditIfStale(): void {
    if (!this.podSubnets.started || this.directory.listing) return;
    if (this.now() - this.directory.listBegan < this.auditMs) return;
    void this.directory
      .relist()
      .then(() => {
        for (const [name, { node, container }] of this.watched) {
          if (this.disturbed.has(name) || !this.removedByOthers(node, container)) continue;
          this.disturbed.add(name);
          this.hooks?.nodeNeedsRound(name);
        }
      })
      .catch((err: unknown) =>
        this.logger?.warn('NIC list failed', { error: (err as Error).message }),
      );
  }

  /**
   * The node's NIC as listed after our last write to it lacks ipConfigurations
   * its NNC lists (another writer removed them). No ARM call.
   */
  private removedByOthers(node: NodeRef, container: NetworkContainer | undefined): boolean {
    if (!container?.ipAssignments?.length || this.locks.has(node.name)) return false;
    if ((this.writtenAt.get(node.name) ?? -Infinity) >= this.directory.listBegan) return false;
    const listed = this.directory.peek(node);
    if (!listed) return false;
    const names = new Set((listed.ipConfigurations ?? []).map((c) => c.name?.toLowerCase()));
    return container.ipAssignments.some((a) => !names.has(a.name.toLowerCase()));
  }

  /** Says what another writer removed and what became of it: log line, metric, Event. */
  private reportRemoved(
    node: NodeRef,
    nic: NetworkInterface,
    restored: Array<{ name: string; ip: string }>,
    lost: Array<{ name: string; ip: string }>,
  ): void {
    if (restored.length === 0 && lost.length === 0) return;
    this.stats.restored += restored.length;
    this.stats.lost += lost.length;
    this.metrics.removedByOthers?.('restored', restored.length);
    this.metrics.removedByOthers?.('lost', lost.length);
    const fields = {
      node: node.name,
      nic: nic.name,
      restored: restored.map((r) => r.ip).join(','),
      lost: lost.map((r) => r.ip).join(','),
    };
    if (lost.length === 0) {
      this.logger?.info('ipConfigurations removed by another writer restored', fields);
      return;
    }
    this.logger?.warn('ipConfigurations removed by another writer lost', fields);
    this.hooks?.warn(
      node.name,
      'IpConfigurationsRemovedByOthers',
      `another writer removed ${restored.length + lost.length} pod ipConfigurations from NIC ${nic.name}: ` +
        `${restored.length} restored with their addresses; ${lost.length} lost (${lost
          .map((r) => r.ip)
          .join(', ')}), their addresses now held elsewhere or not assignable: ` +
        `pods using them on this node must be restarted`,
    );
  }

  releaseAll(node: NodeRef, container: NetworkContainer | undefined): Promise<void> {
    return this.serial(node.name, () => this.release(node, container));
  }

  /** Runs one node's operations one after the other. */
  private async serial<T>(node: string, fn: () => Promise<T>): Promise<T> {
    const before = this.locks.get(node) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const settled = run.catch(() => undefined);
    this.locks.set(node, settled);
    try {
      return await run;
    } finally {
      if (this.locks.get(node) === settled) this.locks.delete(node);
    }
  }

  private async round(node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    const found = await this.directory.lookup(node);
    const pod = this.podSubnets.of(found.podSubnetId);
    const subnet = await pod.get();
    await pod.refreshIfStale().catch((e: unknown) => this.podSubnets.readFailed('usage', e));
    let nic = await this.roundNic(node, found);
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
        this.reportRemoved(node, nic, [], fix.lost);
        this.disturbed.delete(node.name);
        return { held: this.held(node, nic, subnet, found.nodeIP), short };
      }
      try {
        const written = await this.put(found.ref, plan.nic, nic.etag);
        this.nics.set(node.name, written);
        this.writtenAt.set(node.name, this.now());
        const taken = plan.added.length + (plan.createsPrimary ? 1 : 0) + plan.restored.length;
        this.count(pod, taken, plan.removed.length);
        this.reportRemoved(node, written, fix.restore, fix.lost);
        this.disturbed.delete(node.name);
        return { held: this.held(node, written, subnet, found.nodeIP), short };
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
        if (kind === 'precondition-failed' && preconditions++ < this.preconditionRetries) {
          this.stats.preconditionFailed++;
          nic = await this.reread(node, found.ref);
          continue;
        }
        if (kind !== 'subnet-full' && kind !== 'vnet-full') throw err;
        this.stats.subnetFull++;
        pod.markFull();
        short = true;
        fulls++;
        // The virtual network's cap: no address anywhere in it, nothing new this round.
        if (kind === 'vnet-full') {
          this.metrics.limitReached('vnet');
          fulls = Math.max(fulls, 2);
        }
        // A read sent after this refusal, not one in flight from before it.
        await pod.refreshAfter().catch((e: unknown) => this.podSubnets.readFailed('usage', e));
        nic = await this.reread(node, found.ref);
        // Undefined: the usage is unknown (its read refused); the answer alone must do.
        const free = pod.free;
        if (plan.createsPrimary && ((free !== undefined && free < 1) || fulls >= 3)) {
          throw new SubnetFullError(
            `pod subnet ${subnet.name} has no free address for node ${node.name}'s NC primary IP`,
          );
        }
        if (fulls >= 3) return { held: this.held(node, nic, subnet, found.nodeIP), short };
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

  private async release(node: NodeRef, container: NetworkContainer | undefined): Promise<void> {
    const ref = await this.locate(node, container);
    // No NIC (the VM went with the node): Azure freed its addresses with it.
    if (!ref) return this.forget(node.name);
    const found = { ref };
    let nic = await this.reread(node, found.ref).catch((err: unknown) => {
      if (armErrorKind(err) === 'not-found') return undefined;
      throw err;
    });
    for (let attempt = 0; nic; attempt++) {
      const subnet = this.subnetOf(nic);
      const plan = subnet ? planRelease(nic, subnet) : undefined;
      if (!subnet || !plan || plan.removed.length === 0) break;
      try {
        await this.put(found.ref, plan.nic, nic.etag);
        this.writtenAt.set(node.name, this.now());
        this.count(this.podSubnets.of(subnet), 0, plan.removed.length);
        break;
      } catch (err) {
        const kind = armErrorKind(err);
        if (kind === 'not-found') break;
        if (kind !== 'precondition-failed' || attempt >= this.preconditionRetries) throw err;
        this.stats.preconditionFailed++;
        nic = await this.reread(node, found.ref);
      }
    }
    this.forget(node.name);
  }

  /** The NIC of a node being let go (nic-directory.ts), or the one this process last wrote. */
  private async locate(
    node: NodeRef,
    container: NetworkContainer | undefined,
  ): Promise<NicRef | undefined> {
    const cached = node.providerID ? undefined : this.nics.get(node.name);
    return cached?.name ? nicRefOf(cached) : this.directory.locate(node, container);
  }

  /** The subnet a NIC's pod IPs are in: --pod-subnet-id, else its own. */
  private subnetOf(nic: NetworkInterface): string | undefined {
    return this.podSubnetId ?? nicSubnetId(nic);
  }

  private forget(node: string): void {
    this.nics.delete(node);
    this.doubtful.delete(node);
    this.disturbed.delete(node);
    this.watched.delete(node);
    this.writtenAt.delete(node);
  }

  private nicOf(node: string, ref: NicRef): NetworkInterface | undefined {
    const nic = this.nics.get(node);
    return nic?.name && sameNicRef(nicRefOf(nic), ref) ? nic : undefined;
  }

  private async put(
    ref: NicRef,
    nic: NetworkInterface,
    etag: string | undefined,
  ): Promise<NetworkInterface> {
    this.stats.puts++;
    return this.api.put(ref, nic, etag);
  }

  /** The NIC a round starts from: read afresh when in doubt, disturbed, or a scale-set instance's first. */
  private async roundNic(node: NodeRef, found: FoundNic): Promise<NetworkInterface> {
    const cached = this.nicOf(node.name, found.ref);
    // A scale-set instance's NIC as listed carries the NIC's etag, not its VM's: read it first.
    const fresh =
      this.doubtful.has(node.name) ||
      this.disturbed.has(node.name) ||
      (!cached && found.ref.kind === 'scale-set');
    return fresh ? this.reread(node, found.ref) : (cached ?? found.listed);
  }

  private async reread(node: NodeRef, ref: NicRef): Promise<NetworkInterface> {
    const nic = await this.api.get(ref);
    this.nics.set(node.name, nic);
    return nic;
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
    this.metrics.limitReached(cap);
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

  private count(pod: PodSubnet, taken: number, freed: number): void {
    this.stats.allocated += taken;
    this.stats.released += freed;
    this.metrics.allocated(taken);
    this.metrics.released(freed);
    pod.record(taken, freed);
  }
}
