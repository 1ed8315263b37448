// The Azure backend: a node's pod IPs are secondary ipConfigurations on its
// NIC, and one round for one node is ONE PUT of the whole NIC with If-Match
// (nic-round.ts; a deleted node's release, nic-release.ts).
// The node's NIC is the VM's NIC in the pod subnet, or without
// --pod-subnet-id its primary NIC in its own subnet (nic-choice.ts); a VM
// without one is refused with NicNotInPodSubnet before any write. Each pod
// subnet in use has its own usage and CSS (pod-subnets.ts). A 403 on a read
// is reported and counted, never fatal: without the usage, the CSS follows
// what SubnetIsFull answers tell. Other writers' removals are found by a
// background list and put back (removal-audit.ts). A dual-stack pod subnet
// (an IPv6 prefix besides its IPv4 one) gives every node an IPv6 container
// too, its addresses IPv6 ipConfigurations changed in the same PUT
// (docs/design/fulfiller.md, "Dual-stack on Azure").
//
// This file composes the parts; each holds one concern:
//   nic-directory.ts  which NIC is a node's (one list of the resource group)
//   node-nics.ts      each node's NIC as last read/written, its doubt, its queue
//   nic-round.ts      a round's PUT: plan, 412, SubnetIsFull, caps
//   nic-release.ts    a deleted node's release
//   removal-audit.ts  the background list that finds other writers' removals
//   scale-set-policy.ts  which Uniform scale sets' nodes may hold pod addresses
//   pod-subnets.ts    the pod subnets' usage and CSS
//   stats.ts          the counters and the ARM metrics the backend feeds
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import type { IpFamily } from '../nnc/family.ts';
import type { ArmMetricsSink } from './metrics.ts';
import { noArmMetrics } from './metrics.ts';
import type { NicApi } from './nic-api.ts';
import { NicDirectory } from './nic-directory.ts';
import { releaseNic } from './nic-release.ts';
import type { NicReleaseDeps } from './nic-release.ts';
import { NicRounds } from './nic-round.ts';
import type { NicChange, NicResult } from './nic-round.ts';
import { NodeNics } from './node-nics.ts';
import { RemovalAudit } from './removal-audit.ts';
import { ScaleSetPolicies } from './scale-set-policy.ts';
import { PodSubnets } from './pod-subnets.ts';
import { BackendCounters } from './stats.ts';
import type { AzureBackendStats } from './stats.ts';
import type {
  ApplyResult,
  BackendHooks,
  IpBackend,
  NodeRef,
  PoolChange,
  SubnetInfo,
} from '../fulfiller/backend.ts';

export type { AzureBackendStats } from './stats.ts';

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

export class AzureBackend implements IpBackend {
  readonly kind = 'azure';
  readonly stats: AzureBackendStats;
  readonly directory: NicDirectory;
  readonly podSubnets: PodSubnets;
  private readonly podSubnetId: string | undefined;
  private readonly nics: NodeNics;
  private readonly audit: RemovalAudit;
  private readonly rounds: NicRounds;
  private readonly release: NicReleaseDeps;
  private hooks: BackendHooks | undefined;
  /** Why ARM refused IPv6 ipConfigurations (then IPv4 alone is served until a restart). */
  private ipv6RefusedBy: string | undefined;
  private readonly logger: Logger | undefined;

  constructor(options: AzureBackendOptions) {
    this.podSubnetId = options.podSubnetId;
    this.logger = options.logger;
    const now = options.now ?? Date.now;
    const counters = new BackendCounters(options.metrics ?? noArmMetrics);
    this.stats = counters.stats;
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
    const nics = new NodeNics({
      api: options.api,
      directory: this.directory,
      counters,
      podSubnetId: options.podSubnetId,
      now,
    });
    const audit = new RemovalAudit({
      directory: this.directory,
      nics,
      counters,
      hooks: () => this.hooks,
      started: () => this.podSubnets.started,
      now,
      ...(options.auditMs !== undefined ? { auditMs: options.auditMs } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    const forget = (node: string) => {
      nics.forget(node);
      audit.forget(node);
    };
    const preconditionRetries = options.preconditionRetries ?? 5;
    this.nics = nics;
    this.audit = audit;
    this.rounds = new NicRounds({
      directory: this.directory,
      podSubnets: this.podSubnets,
      nics,
      audit,
      scaleSets: new ScaleSetPolicies({
        read: (rg, ss) => options.api.scaleSetUpgradeMode(rg, ss),
        counters,
        now,
        ...(options.minRelistMs !== undefined ? { maxAgeMs: options.minRelistMs } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
      }),
      counters,
      newName: options.newName ?? randomUUID,
      preconditionRetries,
      forget,
      ipv6Refused: (node, message) => this.refuseIpv6(node, message),
    });
    this.release = { podSubnets: this.podSubnets, nics, counters, preconditionRetries, forget };
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

  /**
   * The families of the pod subnet(s): IPv4, and IPv6 when every pod subnet
   * in use has an IPv6 prefix (pod-subnets.ts). IPv4 always: ARM wants an
   * IPv4 primary on every NIC, so a pod subnet is never IPv6 alone.
   */
  families(): IpFamily[] {
    const families = this.podSubnets.families();
    return this.ipv6RefusedBy === undefined ? families : families.filter((f) => f !== 6);
  }

  /**
   * ARM refused IPv6 ipConfigurations (nic-round.ts): IPv4 alone from now on,
   * said once in the log (the node that met it gets a Warning Event), so
   * IPv4 pods are served where ARM keeps Azure's documented one IPv6 address
   * per NIC. A restart tries IPv6 again.
   */
  private refuseIpv6(node: NodeRef, message: string): void {
    if (this.ipv6RefusedBy !== undefined) return;
    this.ipv6RefusedBy = message;
    this.logger?.error('IPv6 pod addresses refused by ARM: serving IPv4 alone', {
      node: node.name,
      error: message,
    });
  }

  /** One round: every family's change in ONE write of the node's NIC (nic-round.ts). */
  async apply(node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    if (change.families[0]?.family !== 4) {
      throw new Error(`node ${node.name}: a round's families start with IPv4 on Azure`);
    }
    return this.nics.serial(node.name, () => this.rounds.apply(node, change));
  }

  /** One round of the node's IPv4 pod addresses alone (tests of single-stack behaviour). */
  async applyNic(node: NodeRef, change: NicChange): Promise<NicResult> {
    const r = await this.apply(node, { families: [{ family: 4, ...change }] });
    return { ...r, held: r.held[0]! };
  }

  /**
   * The node's NIC (as this process last wrote or listed it) holds managed
   * addresses its NNC does not list, or its last round failed so nobody can
   * tell: it needs a round, whatever its spec asks (docs/decisions/0019).
   * Every family's container counts.
   */
  needsRound(node: NodeRef, containers: readonly NetworkContainer[]): boolean {
    if (this.nics.isDoubtful(node.name) || this.audit.isDisturbed(node.name)) return true;
    if (this.audit.check(node, containers)) return true;
    return this.nics.holdsUnlisted(node, containers, this.families());
  }

  releaseAll(node: NodeRef, containers: readonly NetworkContainer[]): Promise<void> {
    return this.nics.serial(node.name, () => releaseNic(this.release, node, containers));
  }
}
