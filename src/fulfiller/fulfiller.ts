// The fulfiller's control loop: makes every NNC's status follow its spec.
// It learns NNCs from a watch (upsert/remove/synced), never acts before the
// first full list (so the backend knows every address already handed out),
// then serves nodes through a NodeQueue: largest deficit first, bounded
// parallelism, minimum interval per node, backoff on failure. Each action
// allocates, writes the whole status with optimistic concurrency (a 409
// re-reads and recomputes), and frees released addresses only once the write
// succeeded, so an address is never in two NNCs.
import { randomUUID } from 'node:crypto';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers, GROUP, NNC_KIND, NNC_VERSION } from '../nnc/types.ts';
import type { EventRecorder } from '../kube/events.ts';
import { noopEventRecorder } from '../kube/events.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { ContainerSetup, IpBackend, SubnetInfo } from './backend.ts';
import { SubnetFullError } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import { ExhaustionPublisher } from './subnet-state.ts';
import { exhaustionLevels } from './exhaustion.ts';
import { neededAddresses, planNode, priorityOf } from './plan.ts';
import type { NncStatusApi, NodeIpLookup, SubnetStateApi } from './ports.ts';
import { NodeQueue, realClock } from './queue.ts';
import type { QueueClock } from './queue.ts';
import { desiredStatus, jsonEqual, STATUS_SUBNET_FULL } from './status.ts';

export interface FulfillerDeps {
  config: FulfillerConfig;
  backend: IpBackend;
  nncApi: NncStatusApi;
  cssApi: SubnetStateApi;
  logger: Logger;
  events?: EventRecorder;
  nodeIp?: NodeIpLookup;
  clock?: QueueClock;
  random?: () => number;
  newId?: () => string;
}

export interface FulfillerStats {
  nodes: number;
  writes: number;
  conflicts: number;
  failures: number;
  allocated: number;
  released: number;
  pending: number;
  active: number;
  subnets: Array<SubnetInfo & { exhausted: boolean | undefined }>;
}

/** Raised when a status write kept conflicting; the queue backs off. */
export class ConflictLoopError extends Error {
  override readonly name = 'ConflictLoopError';
}

/** What a write with unknown outcome touched: reserved addresses and removed ones. */
interface Doubt {
  ips: string[];
  removed: string[];
  setup?: ContainerSetup;
}

type AttemptResult = 'written' | 'noop' | 'invalid' | 'conflict';

export class Fulfiller {
  private readonly deps: FulfillerDeps;
  private readonly log: Logger;
  private readonly events: EventRecorder;
  private readonly clock: QueueClock;
  private readonly newId: () => string;
  private readonly queue: NodeQueue;
  private readonly css: ExhaustionPublisher;
  /** Latest NNC per node as the watch delivered it. */
  private readonly known = new Map<string, NodeNetworkConfig>();
  /** Addresses whose write outcome is unknown (timeout, 5xx), per node. */
  private readonly uncertain = new Map<string, Doubt>();
  /** Last invalid-spec message per node, so the Warning is raised once. */
  private readonly invalidReported = new Map<string, string>();
  private started = false;
  private stopped = false;
  private resyncTimer: unknown;
  private counters = { writes: 0, conflicts: 0, failures: 0, allocated: 0, released: 0 };

  constructor(deps: FulfillerDeps) {
    this.deps = deps;
    this.log = deps.logger;
    this.events = deps.events ?? noopEventRecorder;
    this.clock = deps.clock ?? realClock;
    this.newId = deps.newId ?? randomUUID;
    const { config } = deps;
    this.queue = new NodeQueue({
      workers: config.workers,
      minIntervalMs: config.minIntervalMs,
      backoff: config.backoff,
      clock: this.clock,
      random: deps.random,
      priority: (node) => this.priority(node),
      handler: (node) => this.syncNode(node),
      onError: (node, error, retryInMs) => {
        this.counters.failures++;
        this.log.warn('node action failed', {
          node,
          error: apiErrorInfo(error).message,
          retryInMs,
        });
      },
    });
    this.css = new ExhaustionPublisher({
      api: deps.cssApi,
      levels: exhaustionLevels(config.exhaustionThreshold, config.recoveryMargin),
      holdMs: config.exhaustionHoldMs,
      backoff: config.backoff,
      clock: this.clock,
      logger: this.log,
      random: deps.random,
      onChange: (subnet, exhausted) => {
        void this.events.recordEvent(
          {
            apiVersion: `${GROUP}/v1alpha1`,
            kind: 'ClusterSubnetState',
            name: subnet.name,
            namespace: config.namespace,
          },
          exhausted
            ? {
                type: 'Warning',
                reason: 'SubnetExhausted',
                message: `subnet ${subnet.cidr} has ${subnet.free} free addresses (threshold ${config.exhaustionThreshold})`,
              }
            : {
                type: 'Normal',
                reason: 'SubnetRecovered',
                message: `subnet ${subnet.cidr} has ${subnet.free} free addresses again`,
              },
        );
      },
    });
  }

  /** A watched NNC was added or changed. */
  upsert(nnc: NodeNetworkConfig): void {
    if (this.stopped || !nnc?.metadata?.name) return;
    this.known.set(nnc.metadata.name, nnc);
    this.deps.backend.observe(nnc.metadata.name, dynamicContainers(nnc));
    if (this.started) this.queue.enqueue(nnc.metadata.name);
  }

  /** A watched NNC was deleted: its addresses become free. */
  remove(nnc: NodeNetworkConfig): void {
    if (this.stopped || !nnc?.metadata?.name) return;
    const name = nnc.metadata.name;
    const last = this.known.get(name) ?? nnc;
    this.known.delete(name);
    this.queue.remove(name);
    this.invalidReported.delete(name);
    void this.deps.backend.forget(name, dynamicContainers(last)).then(() => {
      this.publishSubnets();
      this.wakeShortNodes();
    });
    this.log.info('node removed', { node: name });
  }

  /**
   * The watch completed a full list: `all` is every NNC. The first call
   * starts the work (every address is known by then); later ones (after a
   * re-list) just re-queue everything.
   */
  synced(all: NodeNetworkConfig[]): void {
    if (this.stopped) return;
    const seen = new Set<string>();
    for (const nnc of all) {
      if (!nnc?.metadata?.name) continue;
      seen.add(nnc.metadata.name);
      this.known.set(nnc.metadata.name, nnc);
      this.deps.backend.observe(nnc.metadata.name, dynamicContainers(nnc));
    }
    if (!this.started) {
      this.started = true;
      this.log.info('fulfiller started', {
        nodes: this.known.size,
        backend: this.deps.backend.kind,
        subnets: this.deps.backend.subnets().map((s) => `${s.name}=${s.cidr} free ${s.free}`),
      });
      this.armResync();
    }
    for (const name of seen) this.queue.enqueue(name);
    this.publishSubnets();
  }

  /** Re-examines every node (the periodic resync, also callable by tests). */
  resync(): void {
    if (!this.started || this.stopped) return;
    for (const name of this.known.keys()) this.queue.enqueue(name);
    this.publishSubnets();
  }

  /** Resolves when no node has work queued or running and CSS writes are done. */
  async whenIdle(): Promise<void> {
    await this.queue.whenIdle();
    await this.css.settled();
  }

  /** Finishes actions in progress, then stops; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
    await this.queue.stop();
    await this.css.stop();
  }

  stats(): FulfillerStats {
    return {
      nodes: this.known.size,
      ...this.counters,
      pending: this.queue.pending,
      active: this.queue.active,
      subnets: this.deps.backend
        .subnets()
        .map((s) => ({ ...s, exhausted: this.css.published(s.name) })),
    };
  }

  private armResync(): void {
    this.resyncTimer = this.clock.setTimeout(() => {
      this.resync();
      if (!this.stopped) this.armResync();
    }, this.deps.config.resyncMs);
  }

  private publishSubnets(): void {
    if (this.started && !this.stopped) this.css.update(this.deps.backend.subnets());
  }

  /** Addresses came free: nodes left short by a full subnet get another go. */
  private wakeShortNodes(): void {
    if (!this.started || this.stopped) return;
    for (const [name, nnc] of this.known) {
      if (nnc.status?.status === STATUS_SUBNET_FULL) this.queue.enqueue(name);
    }
  }

  private priority(node: string): number {
    const nnc = this.known.get(node);
    if (!nnc) return 0;
    return priorityOf(neededAddresses(planNode(nnc, this.deps.config.scaler.maxIPCount)));
  }

  /** One queued run for a node: settles uncertain writes, then acts, retrying conflicts. */
  private async syncNode(name: string): Promise<void> {
    let nnc = this.known.get(name);
    if (!nnc) return;
    const doubt = this.uncertain.get(name);
    if (doubt) {
      nnc = await this.deps.nncApi.get(name);
      await this.settleUncertain(name, nnc, doubt);
      this.uncertain.delete(name);
    }
    for (let attempt = 0; attempt < this.deps.config.conflictRetries; attempt++) {
      const result = await this.attempt(nnc);
      if (result !== 'conflict') return;
      this.counters.conflicts++;
      nnc = await this.deps.nncApi.get(name);
      this.deps.backend.observe(name, dynamicContainers(nnc));
    }
    throw new ConflictLoopError(`status of ${name} kept conflicting`);
  }

  /** Frees what an uncertain write reserved unless the fresh status shows it landed. */
  private async settleUncertain(
    name: string,
    fresh: NodeNetworkConfig,
    doubt: Doubt,
  ): Promise<void> {
    const containers = dynamicContainers(fresh);
    const present = new Set<string>();
    for (const nc of containers) {
      if (nc.primaryIP) present.add(nc.primaryIP);
      for (const a of nc.ipAssignments ?? []) present.add(a.ip);
    }
    // Reserved but not written: free. Removed and the removal landed: free too.
    const lost = [...doubt.ips, ...doubt.removed].filter((ip) => !present.has(ip));
    const nc = containers[0] ?? { id: '' };
    if (lost.length > 0) {
      await this.deps.backend.release(name, nc, lost);
      this.wakeShortNodes();
    }
    if (doubt.setup && !present.has(doubt.setup.primaryIP)) {
      await this.deps.backend.teardownContainer(name, doubt.setup);
    }
    this.deps.backend.observe(name, containers);
  }

  private async attempt(nnc: NodeNetworkConfig): Promise<AttemptResult> {
    const name = nnc.metadata.name;
    const { config, backend } = this.deps;
    const plan = planNode(nnc, config.scaler.maxIPCount);
    if (plan.invalid) {
      if (this.invalidReported.get(name) !== plan.invalid) {
        this.invalidReported.set(name, plan.invalid);
        this.log.warn('invalid node spec', { node: name, error: plan.invalid });
        void this.events.recordEvent(this.involved(nnc), {
          type: 'Warning',
          reason: 'InvalidSpec',
          message: plan.invalid,
        });
      }
      return 'invalid';
    }
    this.invalidReported.delete(name);

    let container = plan.container;
    let setup: ContainerSetup | undefined;
    if (!container) {
      try {
        setup = await backend.setupContainer(name);
      } catch (err) {
        if (err instanceof SubnetFullError) return this.writeSubnetFull(nnc, err.message);
        throw err;
      }
      const nodeIP = (await this.deps.nodeIp?.(name).catch(() => undefined)) ?? '';
      container = {
        id: this.newId(),
        assignmentMode: 'dynamic',
        type: setup.type,
        primaryIP: setup.primaryIP,
        subnetName: setup.subnetName,
        subnetAddressSpace: setup.subnetAddressSpace,
        defaultGateway: setup.defaultGateway,
        version: 0,
        nodeIP,
        ipAssignments: [],
      };
    }
    const newIps = plan.allocate > 0 ? await backend.allocate(name, container, plan.allocate) : [];
    const subnetShort = newIps.length < plan.allocate;
    const status = desiredStatus({
      previous: nnc.status,
      container,
      isNewContainer: setup !== undefined,
      keep: plan.keep,
      released: plan.release.length,
      newIps,
      requested: plan.requested,
      subnetShort,
      scaler: config.scaler,
      newId: this.newId,
    });
    if (jsonEqual(status, nnc.status)) return 'noop';

    let written: NodeNetworkConfig;
    try {
      written = await this.deps.nncApi.replaceStatus({ ...nnc, status });
    } catch (err) {
      const code = apiErrorInfo(err).statusCode;
      if (code !== undefined && code >= 400 && code < 500) {
        // Rejected: nothing was written, so everything reserved goes back.
        if (newIps.length > 0) await backend.release(name, container, newIps);
        if (setup) await backend.teardownContainer(name, setup);
      } else {
        // Unknown outcome: keep the addresses until a fresh read tells.
        const prev = this.uncertain.get(name);
        this.uncertain.set(name, {
          ips: [...(prev?.ips ?? []), ...newIps],
          removed: [...(prev?.removed ?? []), ...plan.release.map((a) => a.ip)],
          setup: setup ?? prev?.setup,
        });
      }
      if (code === 409) return 'conflict';
      throw err;
    }
    this.counters.writes++;
    this.counters.allocated += newIps.length;
    this.counters.released += plan.release.length;
    if (plan.release.length > 0) {
      await backend.release(
        name,
        container,
        plan.release.map((a) => a.ip),
      );
      this.wakeShortNodes();
    }
    if (written?.metadata?.name === name) this.known.set(name, written);
    this.log.info('node status written', {
      node: name,
      requested: plan.requested,
      assigned: status.assignedIPCount,
      allocated: newIps.length,
      released: plan.release.length,
      status: status.status,
    });
    if (subnetShort && nnc.status?.status !== STATUS_SUBNET_FULL) {
      void this.events.recordEvent(this.involved(written ?? nnc), {
        type: 'Warning',
        reason: 'SubnetFull',
        message: `allocated ${newIps.length} of ${plan.allocate} requested IPs: subnet ${container.subnetName} is full`,
      });
    }
    this.publishSubnets();
    return 'written';
  }

  /** No container can be set up: say so in the status, and wait for addresses to free up. */
  private async writeSubnetFull(nnc: NodeNetworkConfig, reason: string): Promise<AttemptResult> {
    const status = {
      ...nnc.status,
      scaler: { ...this.deps.config.scaler },
      networkContainers: nnc.status?.networkContainers ?? [],
      assignedIPCount: 0,
      status: STATUS_SUBNET_FULL,
    };
    if (jsonEqual(status, nnc.status)) return 'noop';
    try {
      const written = await this.deps.nncApi.replaceStatus({ ...nnc, status });
      this.counters.writes++;
      if (written?.metadata?.name === nnc.metadata.name) this.known.set(nnc.metadata.name, written);
    } catch (err) {
      if (apiErrorInfo(err).statusCode === 409) return 'conflict';
      throw err;
    }
    this.log.warn('node waits for a free subnet address', {
      node: nnc.metadata.name,
      error: reason,
    });
    void this.events.recordEvent(this.involved(nnc), {
      type: 'Warning',
      reason: 'SubnetFull',
      message: reason,
    });
    return 'written';
  }

  private involved(nnc: NodeNetworkConfig): {
    apiVersion: string;
    kind: string;
    name: string;
    namespace: string;
    uid?: string;
  } {
    return {
      apiVersion: `${GROUP}/${NNC_VERSION}`,
      kind: NNC_KIND,
      name: nnc.metadata.name,
      namespace: nnc.metadata.namespace ?? this.deps.config.namespace,
      ...(nnc.metadata.uid ? { uid: nnc.metadata.uid } : {}),
    };
  }
}
