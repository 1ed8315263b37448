// Test doubles for the monitor's ports. They answer with synchronous
// thenables (or thenables resolved on the rxjs scheduler after a virtual
// delay), so one TestScheduler flush drives a whole scenario, writes included.
import type { SchedulerLike } from 'rxjs';
import { createLogger, type Logger } from '../../src/log/logger.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { MemoryPoolStore } from './memory-store.ts';
import type {
  DesiredSpec,
  NncSpecWriter,
  PoolIpStore,
  SpecWriteResult,
  StoreView,
} from '../../src/monitor/ports.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';

type Settle = (value: unknown) => unknown;

/** A thenable that settles synchronously (or after `delay` ms on `scheduler`). */
class Thenable {
  private readonly ok: boolean;
  private readonly value: unknown;
  private readonly scheduler: SchedulerLike | undefined;
  private readonly delay: number;
  constructor(ok: boolean, value: unknown, scheduler?: SchedulerLike, delay = 0) {
    this.ok = ok;
    this.value = value;
    this.scheduler = scheduler;
    this.delay = delay;
  }
  then(onOk?: Settle, onErr?: Settle): Thenable {
    const settle = (): Thenable => {
      const handler = this.ok ? onOk : onErr;
      if (handler === undefined) return new Thenable(this.ok, this.value);
      try {
        return new Thenable(true, handler(this.value));
      } catch (err) {
        return new Thenable(false, err);
      }
    };
    if (this.scheduler === undefined || this.delay <= 0) return settle();
    this.scheduler.schedule(() => void settle(), this.delay);
    return new Thenable(true, undefined);
  }
}

export function resolved<T>(value: T, scheduler?: SchedulerLike, delay = 0): Promise<T> {
  return new Thenable(true, value, scheduler, delay) as unknown as Promise<T>;
}

export function rejected<T>(err: unknown, scheduler?: SchedulerLike, delay = 0): Promise<T> {
  return new Thenable(false, err, scheduler, delay) as unknown as Promise<T>;
}

/** PoolIpStore over a MemoryPoolStore, answering synchronously. */
export class FakeStore implements PoolIpStore {
  readonly mem: MemoryPoolStore;
  markError: Error | undefined;
  readError: Error | undefined;
  /** How many times the store was read (view() calls). */
  views = 0;
  constructor(mem = new MemoryPoolStore()) {
    this.mem = mem;
  }
  view(): Promise<StoreView> {
    this.views += 1;
    if (this.readError !== undefined) return rejected(this.readError);
    return resolved(this.mem.viewSync());
  }
  markPendingRelease(count: number): Promise<string[]> {
    if (this.markError !== undefined) {
      this.mem.markCalls.push(count);
      return rejected(this.markError);
    }
    try {
      return resolved(this.mem.markPendingReleaseSync(count));
    } catch (err) {
      return rejected(err);
    }
  }
}

export interface WriteRecord {
  at: number;
  spec: DesiredSpec;
}

/** Records every write; answers from a script of results (default: success). */
export class FakeWriter implements NncSpecWriter {
  readonly writes: WriteRecord[] = [];
  /** Consumed one per write; when empty every write succeeds. */
  readonly script: (Error | SpecWriteResult | undefined)[] = [];
  /** Applied spec (what the API server would hold). */
  applied: DesiredSpec | undefined;
  generation = 1;
  latencyMs = 0;
  returnGeneration = true;
  private readonly scheduler: SchedulerLike | undefined;
  constructor(scheduler?: SchedulerLike) {
    this.scheduler = scheduler;
  }
  writeSpec(spec: DesiredSpec): Promise<void | SpecWriteResult> {
    this.writes.push({ at: this.scheduler?.now() ?? 0, spec: structuredClone(spec) });
    const next = this.script.shift();
    if (next instanceof Error) return rejected(next, this.scheduler, this.latencyMs);
    this.applied = structuredClone(spec);
    this.generation += 1;
    const result = next ?? (this.returnGeneration ? { generation: this.generation } : undefined);
    return resolved(result, this.scheduler, this.latencyMs);
  }
}

export interface NncOptions {
  request?: number;
  ipsNotInUse?: string[];
  ids?: string[];
  generation?: number;
  uid?: string;
  scaler?: Record<string, unknown>;
  containers?: boolean;
}

export const SCALER = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

export function makeNnc(o: NncOptions = {}): NodeNetworkConfig {
  return {
    metadata: {
      name: 'node-1',
      namespace: 'kube-system',
      ...(o.generation !== undefined ? { generation: o.generation } : {}),
      ...(o.uid !== undefined ? { uid: o.uid } : {}),
    },
    spec: { requestedIPCount: o.request ?? 16, ipsNotInUse: o.ipsNotInUse ?? [] },
    status: {
      scaler: (o.scaler ?? SCALER) as never,
      networkContainers:
        o.containers === false
          ? []
          : [
              {
                id: 'nc-1',
                assignmentMode: 'dynamic',
                subnetName: 'subnet-1',
                ipAssignments: (o.ids ?? []).map((name, i) => ({
                  name,
                  ip: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`,
                })),
              },
            ],
    },
  };
}

export function captureLogger(): { logger: Logger; capture: CaptureTransport } {
  const capture = new CaptureTransport();
  return { logger: createLogger({ transports: [capture], level: 'debug' }), capture };
}
