// One node in a `simulate` replay: its NodeNetworkConfig, a control plane that
// fulfils each spec write after a delay, and pods that take IPs from the real
// node IP store, as the CNI would. The store follows the NNC the product's way:
// whoever subscribes to `nnc$` runs src/ipstore/follow-nnc.ts on it (simulate
// does, as the sidecar does), so pods are placed after each publication.
// Everything happens in virtual time on the given scheduler.
import { randomUUID } from 'node:crypto';
import type { SchedulerLike } from 'rxjs';
import { Subject } from 'rxjs';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { DesiredSpec, NncSpecWriter } from '../monitor/ports.ts';
import type { NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { PodModel } from './pod-model.ts';

export interface VirtualNodeOptions {
  scheduler: SchedulerLike;
  store: NodeIpStore;
  scaler: ScalerSpec;
  /** Virtual ms between a spec write and the status following it. */
  fulfilDelayMs: number;
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
      const written = structuredClone(this.nnc.spec);
      this.options.scheduler.schedule(() => this.fulfil(written), this.options.fulfilDelayMs);
      return Promise.resolve({ generation });
    },
  };

  /** Sets the number of pods that want an IP; pods beyond the free IPs wait. */
  setDemand(demand: number): void {
    this.demand = demand;
    this.pods.setDemand(demand);
    this.sample();
  }

  /**
   * The control plane's side: each write is fulfilled after the delay with
   * the spec it wrote. A control plane reads the spec when it starts on a
   * write, so a later write is never delivered with an earlier one's
   * fulfilment (fulfilling the latest spec did that, and rewarded whoever
   * wrote last: docs/decisions/0034). Writes are worked on side by side
   * here; a controller that works one at a time also holds a write back
   * behind the one under way (0034 measures that).
   */
  private fulfil(written: NodeNetworkConfig['spec']): void {
    const spec = written ?? {};
    const nc = this.nnc.status?.networkContainers?.[0];
    if (!nc) return;
    const notInUse = new Set(spec.ipsNotInUse ?? []);
    const kept = (nc.ipAssignments ?? []).filter((a) => !notInUse.has(a.name));
    const wanted = spec.requestedIPCount ?? kept.length;
    while (kept.length < wanted) kept.push({ name: randomUUID(), ip: this.nextAddress() });
    if (kept.length === (nc.ipAssignments ?? []).length && notInUse.size === 0) return;
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
