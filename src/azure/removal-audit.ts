// Other writers (cloud-provider-azure's whole-NIC PUT from a stale read
// without If-Match; a scale-set reimage or model upgrade) may remove pod
// ipConfigurations the NNC still lists, and ARM frees their addresses. Each
// time the fulfiller asks needsRound (its resync, every minute) and the NIC
// list is older than `auditMs` (default 30 s), the NICs are listed again in
// the background; a node whose NIC, listed after our last write to it, lacks
// names its NNC lists is asked a round (BackendHooks.nodeNeedsRound): found
// within one resync plus one list. The round re-reads the NIC and puts them
// back with the same name and address (`Static`, restore.ts); an address ARM
// has given to another NIC meanwhile (`PrivateIPAddressIsAllocated`), or any on a
// Uniform scale-set instance (its model cannot name an address), is lost: a
// Warning Event `IpConfigurationsRemovedByOthers`, a log line and
// `pool_monitor_arm_ipconfigs_removed_by_others_total{outcome}` say so.
// Until then `pool_monitor_arm_ipconfigs_missing` counts the addresses
// statuses list that their NICs lack (no other node may be given them).
// Every family's container counts (their ids are unique across families).
import type { NetworkInterface } from '@azure/arm-network';
import type { Logger } from '../log/logger.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import { parseScaleSetNicId } from './arm/ids.ts';
import type { NicDirectory } from './nic-directory.ts';
import type { NodeNics } from './node-nics.ts';
import type { RemovedConfig } from './restore.ts';
import type { BackendCounters } from './stats.ts';
import type { BackendHooks, NodeRef } from '../fulfiller/backend.ts';

export interface RemovalAuditOptions {
  directory: NicDirectory;
  nics: NodeNics;
  counters: BackendCounters;
  /** The fulfiller's hooks, once attached. */
  hooks: () => BackendHooks | undefined;
  /** No background list before the backend has started. */
  started: () => boolean;
  now: () => number;
  /** NICs are listed again when the list is this old (default 30 s). */
  auditMs?: number;
  logger?: Logger;
}

export class RemovalAudit {
  private readonly directory: NicDirectory;
  private readonly nics: NodeNics;
  private readonly counters: BackendCounters;
  private readonly hooks: () => BackendHooks | undefined;
  private readonly started: () => boolean;
  private readonly now: () => number;
  private readonly auditMs: number;
  private readonly logger: Logger | undefined;
  /** Nodes whose NIC, listed after our last write, lacks what their NNC lists: how many. */
  private readonly disturbed = new Map<string, number>();
  /** Per node: its Node and what its NNC lists (each family's container), as last asked by needsRound. */
  private readonly watched = new Map<
    string,
    { node: NodeRef; containers: readonly NetworkContainer[] }
  >();

  constructor(options: RemovalAuditOptions) {
    this.directory = options.directory;
    this.nics = options.nics;
    this.counters = options.counters;
    this.hooks = options.hooks;
    this.started = options.started;
    this.now = options.now;
    this.auditMs = options.auditMs ?? 30_000;
    this.logger = options.logger;
  }

  isDisturbed(node: string): boolean {
    return this.disturbed.has(node);
  }

  /**
   * Watches the node (what its NNC lists, for the background list) and says
   * whether its NIC as listed already lacks some of it. No ARM call.
   */
  check(node: NodeRef, containers: readonly NetworkContainer[]): boolean {
    this.watched.set(node.name, { node, containers });
    this.auditIfStale();
    const missing = this.removedByOthers(node, containers);
    if (missing === 0) return false;
    this.disturb(node.name, missing);
    return true;
  }

  /**
   * The node's round wrote (or needed no write): says what another writer
   * had removed and what became of it, and the node is no longer disturbed.
   */
  settled(
    node: NodeRef,
    nic: NetworkInterface,
    restored: RemovedConfig[],
    lost: RemovedConfig[],
  ): void {
    this.report(node, nic, restored, lost);
    this.undisturb(node.name);
  }

  forget(node: string): void {
    this.undisturb(node);
    this.watched.delete(node);
  }

  private disturb(node: string, missing: number): void {
    this.disturbed.set(node, missing);
    this.counters.missing(this.missingNow());
  }

  private undisturb(node: string): void {
    if (this.disturbed.delete(node)) this.counters.missing(this.missingNow());
  }

  private missingNow(): number {
    let n = 0;
    for (const m of this.disturbed.values()) n += m;
    return n;
  }

  /** Lists the NICs again in the background when the list is `auditMs` old. */
  private auditIfStale(): void {
    if (!this.started() || this.directory.listing) return;
    if (this.now() - this.directory.listBegan < this.auditMs) return;
    void this.directory
      .relist()
      .then(() => {
        for (const [name, { node, containers }] of this.watched) {
          if (this.disturbed.has(name)) continue;
          const missing = this.removedByOthers(node, containers);
          if (missing === 0) continue;
          this.disturb(name, missing);
          this.hooks()?.nodeNeedsRound(name);
        }
      })
      .catch((err: unknown) =>
        this.logger?.warn('NIC list failed', { error: (err as Error).message }),
      );
  }

  /**
   * How many ipConfigurations its NNC lists the node's NIC, as listed after
   * our last write to it, lacks (another writer removed them). No ARM call.
   */
  private removedByOthers(node: NodeRef, containers: readonly NetworkContainer[]): number {
    const assigned = containers.flatMap((nc) => nc.ipAssignments ?? []);
    if (assigned.length === 0 || this.nics.busy(node.name)) return 0;
    if (this.nics.lastWrite(node.name) >= this.directory.listBegan) return 0;
    const listed = this.directory.peek(node);
    if (!listed) return 0;
    const names = new Set((listed.ipConfigurations ?? []).map((c) => c.name?.toLowerCase()));
    return assigned.filter((a) => !names.has(a.name.toLowerCase())).length;
  }

  /** Says what another writer removed and what became of it: log line, metric, Event. */
  private report(
    node: NodeRef,
    nic: NetworkInterface,
    restored: RemovedConfig[],
    lost: RemovedConfig[],
  ): void {
    if (restored.length === 0 && lost.length === 0) return;
    this.counters.removedByOthers(restored.length, lost.length);
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
    // A Uniform instance's NIC loses them only to a reset of its model.
    const scaleSet = parseScaleSetNicId(nic.id);
    const who = scaleSet
      ? `a reimage or an upgrade to the latest model of scale set ${scaleSet.scaleSet} (instance ${scaleSet.instanceId}) removed`
      : 'another writer removed';
    this.logger?.warn('ipConfigurations removed by another writer lost', {
      ...fields,
      ...(scaleSet ? { scaleSet: scaleSet.scaleSet, instance: scaleSet.instanceId } : {}),
    });
    this.hooks()?.warn(
      node.name,
      'IpConfigurationsRemovedByOthers',
      `${who} ${restored.length + lost.length} pod ipConfigurations from NIC ${nic.name}: ` +
        `${restored.length} restored with their addresses; ${lost.length} lost (${lost
          .map((r) => r.ip)
          .join(', ')}), their addresses now held elsewhere or not assignable: ` +
        `pods using them on this node must be restarted`,
    );
  }
}
