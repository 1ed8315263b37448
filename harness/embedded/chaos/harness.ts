// Runs a chaos plan against a running embedded cluster: installs the write
// fault policy on the API server, then at each planned moment drops
// watches, compacts history, cuts the standby fulfiller off the API server
// or kills a component with SIGKILL and starts it again. Actions on one component run one after the other (a kill waits for
// the previous restart); everything else runs at its time. stop() ends the
// chaos (no more faults or kills) and waits for restarts in progress.
import type { ApiServer } from '../../apiserver/server.ts';
import type { Logger } from '../../../src/log/logger.ts';
import { seededRandom } from '../../../src/sim/random.ts';
import type { ChaosHost } from './host.ts';
import { fulfillerLease, leaseHolder } from './lease-holder.ts';
import type { ChaosAction, FulfillerRole } from './plan.ts';
import type { ComponentProcess } from './processes.ts';
import { WriteFaults } from './write-faults.ts';
import { NodeDeletions } from './node-deletions.ts';
import { errorText } from '../../../src/log/error-text.ts';

/** The report's `chaos` section. */
export interface ChaosSummary {
  seed: number;
  rate: number;
  apiWrites: number;
  /** Of apiWrites, those while faults were on (the rest came after the chaos window). */
  chaosWrites: number;
  apiFaults: number;
  /** apiFaults / chaosWrites: at least the rate. */
  faultShare: number;
  faultsByStatus: Record<string, number>;
  /** Of the 500s, writes that were applied and then answered 500 (the answer lost). */
  lostAnswers: number;
  /** Watch streams the API server ended. */
  watchDrops: number;
  /** Times it ended them (all, or one resource's). */
  watchDropEvents: number;
  /** Times the standby fulfiller was cut off the API server (replica-proxy.ts). */
  standbyCuts: number;
  /** Its connections (watches among them) those cuts ended, and new ones refused while cut. */
  standbyCutConnections: number;
  standbyRefusedConnections: number;
  compactions: number;
  /** Watches that resumed from compacted history and got 410 Gone. */
  goneWatches: number;
  sidecarRestarts: number;
  fulfillerRestarts: number;
  /** Restarts by component (sidecar-node-0, fulfiller-1, ...). */
  restarts: Record<string, number>;
  /** Fulfiller kills that hit the replica holding the Lease. */
  leaderKills: number;
  /** Components that exited on their own (crashes of the product): none expected. */
  crashes: { component: string; how: string }[];
  /** Components that did not exit 0 on SIGTERM at the end. */
  uncleanShutdowns: { component: string; how: string }[];
  /** Nodes whose Node object was deleted through the API while their kubelet and sidecar ran. */
  nodeDeletions: number;
  /** Of those, deleted while no fulfiller replica ran. */
  nodeDeletionsWithoutFulfiller: number;
  /** Deleted Nodes their kubelet registered again (a new uid). */
  nodeReregistrations: number;
  /**
   * Requests refused as unauthenticated (401) while a Node was deleted: its
   * sidecar's token is bound to the Node (node-deletions.ts). Not counted
   * against the product.
   */
  unauthenticatedWhileNodesDeleted: number;
}

export interface ChaosHarnessOptions {
  seed: number;
  rate: number;
  plan: readonly ChaosAction[];
  server: ApiServer;
  host: ChaosHost;
  namespace: string;
  logger: Logger;
}

/** How long a standby cut waits for the standby to have connections open, and how often it looks. */
const CUT_WAIT_MS = 10_000;
const CUT_POLL_MS = 100;

export class ChaosHarness {
  readonly faults: WriteFaults;
  private readonly o: ChaosHarnessOptions;
  private readonly log: Logger;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly crashes: { component: string; how: string }[] = [];
  private watchDrops = 0;
  private watchDropEvents = 0;
  private standbyCuts = 0;
  private compactions = 0;
  private leaderKills = 0;
  private stopped = false;
  private readonly nodes: NodeDeletions;

  constructor(options: ChaosHarnessOptions) {
    this.o = options;
    this.log = options.logger.child({ component: 'chaos' });
    this.nodes = new NodeDeletions({
      server: options.server,
      logger: options.logger,
      sidecarKubeconfig: (node) => options.host.sidecarKubeconfigs.get(node),
      restartSidecar: (node) => {
        const p = options.host.sidecars.get(node);
        if (!p) return Promise.resolve();
        // Even after stop(): the sidecar must not end the run on its old Node's token.
        this.chain(p, 0, undefined, true);
        return this.chains.get(p.name) ?? Promise.resolve();
      },
    });
    // Faults draw from their own stream: the plan's stream is used up before the run.
    this.faults = new WriteFaults(options.rate, seededRandom(options.seed ^ 0x5eed));
  }

  /** Installs the fault policy now; the plan's actions run from now on. */
  start(): void {
    this.o.server.faults.setPolicy(this.faults.policy());
    this.log.info('chaos started', {
      seed: this.o.seed,
      rate: this.o.rate,
      actions: this.o.plan.length,
    });
    for (const action of this.o.plan) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.run(action);
      }, action.atMs);
      this.timers.add(timer);
    }
  }

  /** A component exited on its own: a crash of the product. It is started again, as a kubelet would. */
  noteCrash(component: string, how: string): void {
    this.crashes.push({ component, how });
    this.log.error('component crashed', { target: component, how });
    const p = this.o.host.all().find((c) => c.name === component);
    if (!p || this.stopped) return;
    const previous = this.chains.get(p.name) ?? Promise.resolve();
    this.chains.set(
      p.name,
      previous.then(async () => {
        await new Promise((r) => setTimeout(r, 1000));
        if (!p.running && !this.stopped) await p.start().catch(() => {});
      }),
    );
  }

  private run(action: ChaosAction): void {
    if (this.stopped) return;
    switch (action.kind) {
      case 'drop-watches': {
        const n = this.o.server.faults.dropWatches(action.resource);
        this.watchDrops += n;
        this.watchDropEvents += 1;
        this.log.info('chaos: watches dropped', { resource: action.resource ?? 'all', watches: n });
        return;
      }
      case 'compact':
        this.o.server.faults.compactHistory();
        this.compactions += 1;
        this.log.info('chaos: history compacted');
        return;
      case 'kill-sidecar': {
        const p = this.o.host.sidecars.get(action.node);
        if (p) this.chain(p, action.downMs);
        return;
      }
      case 'cut-standby':
        void this.cutStandby(action.downMs);
        return;
      case 'kill-fulfiller': {
        const p = this.fulfillerFor(action.role);
        if (p) this.chain(p, action.downMs, action.role);
        return;
      }
      case 'delete-node':
        this.deleteNode(action);
        return;
    }
  }

  /**
   * Deletes the Node (after killing both fulfillers when asked, the deletion
   * made once neither runs), registers it again after `downMs`; one
   * deletion of a node at a time.
   */
  private deleteNode(action: Extract<ChaosAction, { kind: 'delete-node' }>): void {
    const replicas = this.o.host.fulfillers;
    let restartFulfillers = (): void => {};
    if (action.fulfillersDown) {
      // Each replica is killed in its turn, and started again only once
      // the Node is deleted and its NNC with it (a second later).
      const gate = new Promise<void>((resolve) => (restartFulfillers = resolve));
      for (const p of replicas) {
        const previous = this.chains.get(p.name) ?? Promise.resolve();
        this.chains.set(
          p.name,
          previous.then(async () => {
            this.log.info('chaos: kill -9', { target: p.name, pid: p.pid, for: 'node deletion' });
            await p.kill();
            await gate;
            await new Promise((r) => setTimeout(r, 1000));
            p.restarts += 1;
            try {
              await p.start();
              this.log.info('chaos: restarted', { target: p.name, pid: p.pid });
            } catch (err) {
              const how = `restart failed: ${errorText(err)}`;
              this.crashes.push({ component: p.name, how });
              this.log.error('component crashed', { target: p.name, how });
            }
          }),
        );
      }
    }
    const key = `node/${action.node}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const index = [...this.o.host.sidecars.keys()].indexOf(action.node);
    const next = previous.then(async () => {
      if (action.fulfillersDown) {
        const deadline = Date.now() + 15_000;
        while (replicas.some((p) => p.running) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
      }
      await this.nodes
        .run(action.node, index, action.downMs, {
          noFulfiller: () => !replicas.some((p) => p.running),
          afterDelete: restartFulfillers,
        })
        .catch((err: unknown) =>
          this.log.error('chaos: node deletion failed', {
            node: action.node,
            error: errorText(err),
          }),
        )
        .finally(restartFulfillers);
    });
    this.chains.set(key, next);
  }

  /** The replica holding the Lease ('leader') or another one ('standby'). */
  /**
   * Cuts the standby off once it has connections open (its watches): one
   * restarting, on a loaded machine seconds after its kill, has none, and a
   * cut then would test nothing. Waits at most CUT_WAIT_MS, then cuts anyway.
   */
  private async cutStandby(downMs: number): Promise<void> {
    const until = Date.now() + CUT_WAIT_MS;
    for (;;) {
      if (this.stopped) return;
      const p = this.fulfillerFor('standby');
      const proxy = p && this.o.host.proxies.get(p.name);
      if (!p || !proxy) return;
      if (proxy.openConnections > 0 || Date.now() >= until) {
        const n = proxy.cut(downMs);
        this.standbyCuts += 1;
        this.log.info('chaos: standby cut off the API server', {
          target: p.name,
          connections: n,
          downMs,
        });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, CUT_POLL_MS));
    }
  }

  private fulfillerFor(role: FulfillerRole): ComponentProcess | undefined {
    const replicas = this.o.host.fulfillers;
    const leader = leaseHolder(fulfillerLease(this.o.server, this.o.namespace), replicas);
    if (role === 'leader') return leader ?? replicas[0];
    return replicas.find((p) => p !== leader) ?? replicas[0];
  }

  private chain(
    p: ComponentProcess,
    downMs: number,
    role?: FulfillerRole,
    evenStopped = false,
  ): void {
    const previous = this.chains.get(p.name) ?? Promise.resolve();
    const next = previous.then(async () => {
      if (this.stopped && !evenStopped) return;
      if (role === 'leader' && this.fulfillerFor('leader') === p) this.leaderKills += 1;
      this.log.info('chaos: kill -9', { target: p.name, pid: p.pid, role, downMs });
      try {
        await p.crashAndRestart(downMs);
        this.log.info('chaos: restarted', { target: p.name, pid: p.pid });
      } catch (err) {
        const how = `restart failed: ${errorText(err)}`;
        this.crashes.push({ component: p.name, how });
        this.log.error('component crashed', { target: p.name, how });
      }
    });
    this.chains.set(p.name, next);
  }

  /** No more actions or faults; waits for restarts in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.faults.disable();
    // A node's chain waits for the sidecar restart it adds (node-deletions.ts).
    await Promise.all(this.chains.values());
    this.nodes.close();
    this.log.info('chaos stopped', { ...this.summary() });
  }

  /** Removes the fault policy from the API server. */
  detach(): void {
    this.o.server.faults.setPolicy(undefined);
  }

  summary(): ChaosSummary {
    const c = this.faults.counts;
    const restarts: Record<string, number> = {};
    let sidecarRestarts = 0;
    let fulfillerRestarts = 0;
    for (const p of this.o.host.sidecars.values()) {
      restarts[p.name] = p.restarts;
      sidecarRestarts += p.restarts;
    }
    for (const p of this.o.host.fulfillers) {
      restarts[p.name] = p.restarts;
      fulfillerRestarts += p.restarts;
    }
    return {
      seed: this.o.seed,
      rate: this.o.rate,
      apiWrites: c.writes,
      chaosWrites: c.chaosWrites,
      apiFaults: c.faults,
      faultShare: c.chaosWrites === 0 ? 0 : Math.round((c.faults / c.chaosWrites) * 1000) / 1000,
      faultsByStatus: { ...c.byStatus },
      lostAnswers: c.lostAnswers,
      watchDrops: this.watchDrops,
      watchDropEvents: this.watchDropEvents,
      standbyCuts: this.standbyCuts,
      standbyCutConnections: [...this.o.host.proxies.values()].reduce(
        (n, p) => n + p.cutConnections,
        0,
      ),
      standbyRefusedConnections: [...this.o.host.proxies.values()].reduce(
        (n, p) => n + p.refusedConnections,
        0,
      ),
      compactions: this.compactions,
      goneWatches: this.o.server
        .counters()
        .entries()
        .filter((e) => e.verb === 'watch' && e.code === 410)
        .reduce((n, e) => n + e.count, 0),
      sidecarRestarts,
      fulfillerRestarts,
      restarts,
      leaderKills: this.leaderKills,
      crashes: [...this.crashes],
      uncleanShutdowns: this.o.host.shutdowns.filter((s) => s.how !== 'exit 0'),
      nodeDeletions: this.nodes.deletions,
      nodeDeletionsWithoutFulfiller: this.nodes.whileNoFulfiller,
      nodeReregistrations: this.nodes.reregistrations,
      unauthenticatedWhileNodesDeleted: this.nodes.unauthenticatedWhileNodesDeleted(),
    };
  }
}
