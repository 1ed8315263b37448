// One node in a `simulate` replay: its NodeNetworkConfig, a control plane that
// fulfils its spec, and pods that take IPs from the real node IP store, as
// the CNI would. The control plane works as the fulfiller does
// (src/fulfiller/queue.ts): one round of a node at a time, the spec read
// when the round begins, a change meanwhile waiting for the next round, no
// two rounds begun within its minimum interval; a round that has nothing to
// add or remove ends at once, one that has takes the backend's time
// (fulfil-timing.ts). `side-by-side` is the idealised control plane earlier
// replays used, kept for comparison: each write is fulfilled on its own,
// a fixed time after it, whatever else is under way. The store follows the NNC the product's way:
// whoever subscribes to `nnc$` runs src/ipstore/follow-nnc.ts on it (simulate
// does, as the sidecar does), so pods are placed after each publication.
// Everything happens in virtual time on the given scheduler.
import { randomUUID } from 'node:crypto';
import type { SchedulerLike } from 'rxjs';
import { Subject } from 'rxjs';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { DesiredSpec, NncSpecWriter } from '../monitor/ports.ts';
import type { NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { DEFAULT_FULFILLER_CONFIG } from '../fulfiller/config.ts';
import { PodModel } from './pod-model.ts';

/** How the control plane works a node's spec writes (see the top of this file). */
export type ControlPlaneModel = 'serial' | 'side-by-side';
export const CONTROL_PLANE_MODELS: readonly ControlPlaneModel[] = ['serial', 'side-by-side'];

export interface VirtualNodeOptions {
  scheduler: SchedulerLike;
  store: NodeIpStore;
  scaler: ScalerSpec;
  /**
   * How long a round that changes the status takes (ms), by when it
   * begins (ms of virtual time); side by side, the time from each write
   * to its fulfilment.
   */
  roundMs: (startMs: number) => number;
  /** Default `serial`. */
  controlPlane?: ControlPlaneModel;
  /** Least ms between two rounds' starts (serial; the fulfiller's default). */
  minIntervalMs?: number;
  /** IPs the node starts with (and its first requestedIPCount). */
  initialIps: number;
  /** Counts every change of demand, request or allocation. */
  onSample?: (sample: {
    demand: number;
    requested: number;
    allocated: number;
    waiting: number;
  }) => void;
}

const NC_ID = 'nc-sim-0';
const SUBNET = '10.240.0.0/16';

/** Hands out addresses 10.240.x.y from .4 up, never twice. */
function addressAllocator(): () => string {
  let next = 4;
  return () => {
    const n = next;
    next += 1;
    return `10.240.${Math.floor(n / 256) % 256}.${n % 256}`;
  };
}

export class VirtualNode {
  readonly nnc$ = new Subject<NodeNetworkConfig>();
  writes = 0;
  private nnc: NodeNetworkConfig;
  readonly pods: PodModel;
  private demand = 0;
  private readonly nextAddress = addressAllocator();
  private readonly options: VirtualNodeOptions;
  /** Serial: a round is under way, a change waits for the next, a start is booked. */
  private running = false;
  private dirty = false;
  private startBooked = false;
  private lastStart = Number.NEGATIVE_INFINITY;
  /** Rounds that changed the status, and their time in all (ms). */
  rounds = 0;
  roundsMs = 0;

  constructor(options: VirtualNodeOptions) {
    this.options = options;
    this.pods = new PodModel(options.store, () => options.scheduler.now());
    const ipAssignments = Array.from({ length: options.initialIps }, () => ({
      name: randomUUID(),
      ip: this.nextAddress(),
    }));
    this.nnc = {
      apiVersion: 'acn.azure.com/v1alpha',
      kind: 'NodeNetworkConfig',
      metadata: { name: 'sim-node', namespace: 'kube-system', generation: 1 },
      spec: { requestedIPCount: options.initialIps },
      status: {
        scaler: options.scaler,
        networkContainers: [
          {
            id: NC_ID,
            assignmentMode: 'dynamic',
            type: 'vnet',
            primaryIP: '10.240.0.4',
            subnetName: 'podnet',
            subnetAddressSpace: SUBNET,
            defaultGateway: '10.240.0.1',
            version: 1,
            ipAssignments,
          },
        ],
      },
    };
  }

  /** The NNC as the API server would hand it out now. */
  current(): NodeNetworkConfig {
    return structuredClone(this.nnc);
  }

  allocated(): number {
    return this.nnc.status?.networkContainers?.[0]?.ipAssignments?.length ?? 0;
  }

  /** The spec writer the monitor uses: applies the spec, then fulfils it later. */
  readonly writer: NncSpecWriter = {
    writeSpec: (spec: DesiredSpec) => {
      this.writes += 1;
      const before = this.nnc.spec;
      const changed =
        before?.requestedIPCount !== spec.requestedIPCount ||
        JSON.stringify(before?.ipsNotInUse ?? []) !== JSON.stringify(spec.ipsNotInUse);
      const generation = (this.nnc.metadata.generation ?? 1) + (changed ? 1 : 0);
      this.nnc = {
        ...this.nnc,
        metadata: { ...this.nnc.metadata, generation },
        spec: {
          requestedIPCount: spec.requestedIPCount,
          ...(spec.ipsNotInUse.length > 0 ? { ipsNotInUse: [...spec.ipsNotInUse] } : {}),
        },
      };
      this.publish();
      if (this.options.controlPlane === 'side-by-side') {
        const written = structuredClone(this.nnc.spec);
        const delay = this.options.roundMs(this.options.scheduler.now());
        this.options.scheduler.schedule(() => this.fulfil(written), delay);
      } else this.enqueue();
      return Promise.resolve({ generation });
    },
  };

  /** Sets the number of pods that want an IP; pods beyond the free IPs wait. */
  setDemand(demand: number): void {
    this.demand = demand;
    this.pods.setDemand(demand);
    this.sample();
  }

  /** The spec changed: a round begins when none is under way and the interval allows. */
  private enqueue(): void {
    if (this.running) {
      this.dirty = true;
      return;
    }
    if (this.startBooked) return;
    this.startBooked = true;
    const { scheduler } = this.options;
    const minInterval = this.options.minIntervalMs ?? DEFAULT_FULFILLER_CONFIG.minIntervalMs;
    const wait = Math.max(0, this.lastStart + minInterval - scheduler.now());
    scheduler.schedule(() => this.begin(), wait);
  }

  /**
   * A round begins: it reads the spec now. Nothing to add or remove ends it
   * at once; else the status follows what it read once the backend's time
   * has passed, and a change made meanwhile waits for the next round.
   */
  private begin(): void {
    this.startBooked = false;
    const { scheduler } = this.options;
    const now = scheduler.now();
    this.lastStart = now;
    const spec = structuredClone(this.nnc.spec);
    if (this.outcome(spec) === undefined) return;
    this.running = true;
    const ms = Math.max(0, this.options.roundMs(now));
    this.rounds += 1;
    this.roundsMs += ms;
    scheduler.schedule(() => {
      this.running = false;
      this.fulfil(spec);
      if (this.dirty) {
        this.dirty = false;
        this.enqueue();
      }
    }, ms);
  }

  /** The IP assignments the status has after fulfilling `written`; undefined: nothing to do. */
  private outcome(written: NodeNetworkConfig['spec']): { name: string; ip: string }[] | undefined {
    const spec = written ?? {};
    const nc = this.nnc.status?.networkContainers?.[0];
    if (!nc) return undefined;
    const notInUse = new Set(spec.ipsNotInUse ?? []);
    const before = nc.ipAssignments ?? [];
    const kept = before.filter((a) => !notInUse.has(a.name));
    const wanted = spec.requestedIPCount ?? kept.length;
    if (kept.length === before.length && kept.length >= wanted) return undefined;
    return kept;
  }

  /**
   * The status follows `written`, the spec a round read (or, side by side,
   * the spec a write wrote): the IPs it marks leave, and IPs are added up
   * to its request. A later write is never delivered with an earlier one's
   * round (docs/decisions/0034).
   */
  private fulfil(written: NodeNetworkConfig['spec']): void {
    const kept = this.outcome(written);
    if (kept === undefined) return;
    const wanted = written?.requestedIPCount ?? kept.length;
    while (kept.length < wanted) kept.push({ name: randomUUID(), ip: this.nextAddress() });
    this.nnc = structuredClone(this.nnc);
    const target = this.nnc.status?.networkContainers?.[0];
    if (target) target.ipAssignments = kept;
    this.publish(); // the store follows the new status
    this.pods.place();
    this.sample();
  }

  /** Hands the NNC as it is now to the subscribers of `nnc$`. */
  publish(): void {
    this.sample();
    this.nnc$.next(this.current());
  }

  private sample(): void {
    this.options.onSample?.({
      demand: this.demand,
      requested: this.nnc.spec?.requestedIPCount ?? 0,
      allocated: this.allocated(),
      waiting: this.pods.waitingCount(),
    });
  }
}
