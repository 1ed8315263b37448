// The long-running operations NIC and scale-set VM PUTs start, polled
// through Azure-AsyncOperation. They complete lazily: whoever looks after
// `doneAt` sees them finished, so an injected clock makes them deterministic.
import { randomUUID } from 'node:crypto';
import type { ArmHttpError } from './errors.ts';

export type OperationTiming = 'fast' | 'realistic';

/** Realistic operation durations, ms: [shortest, longest]. */
export const REALISTIC_OPERATION_MS = { nic: [10_000, 60_000], vm: [30_000, 120_000] } as const;

export interface Operation {
  id: string;
  nicKey: string;
  /** The resource group of the resource the operation writes (where its polls are authorized). */
  resourceGroupId: string;
  doneAt: number;
  failure?: ArmHttpError;
  settled: boolean;
}

export interface OperationStatus {
  status: 'InProgress' | 'Succeeded' | 'Failed';
  error?: { code: string; message: string };
}

export interface OperationTimes {
  now: () => number;
  /** How long an operation runs with `fast` timing, ms. */
  operationMs: number;
  timing: OperationTiming;
  /** Draws realistic durations. */
  random: () => number;
}

/** An operation's status URL, its id at the end (Azure-AsyncOperation). */
export const OP_PATH = /\/operations\/([^/]+)\/?$/i;

const MAX_OPERATIONS = 20_000;

export class ArmOperations {
  private readonly times: OperationTimes;
  private readonly operations = new Map<string, Operation>();
  /** NIC key → the operation in progress on it. */
  private readonly busy = new Map<string, string>();
  /** The longest operation started (ms), for the bench's bound. */
  longestOperationMs = 0;

  constructor(times: OperationTimes) {
    this.times = times;
  }

  /** A new operation on the NIC at `nicKey`, not recorded yet (add). */
  begin(nicKey: string, resourceGroupId: string, kind: 'nic' | 'vm'): Operation {
    return {
      id: randomUUID(),
      nicKey,
      resourceGroupId,
      doneAt: this.times.now() + this.track(this.durationOf(kind)),
      settled: false,
    };
  }

  /** Whether an operation still runs on the NIC at `nicKey`. */
  inProgressOn(nicKey: string): boolean {
    return this.busy.has(nicKey);
  }

  /** Records an accepted operation; a running one holds its NIC until it settles. */
  add(op: Operation, running: boolean): void {
    this.operations.set(op.id, op);
    if (running) this.busy.set(op.nicKey, op.id);
  }

  /** Finishes operations whose time has come; `succeeded` hears each NIC one finished well. */
  settle(succeeded: (nicKey: string) => void): void {
    const now = this.times.now();
    for (const op of this.operations.values()) {
      if (op.settled || now < op.doneAt) continue;
      op.settled = true;
      if (this.busy.get(op.nicKey) === op.id) this.busy.delete(op.nicKey);
      if (!op.failure) succeeded(op.nicKey);
    }
    if (this.operations.size > MAX_OPERATIONS) {
      for (const [id, op] of this.operations) {
        if (this.operations.size <= MAX_OPERATIONS / 2) break;
        if (op.settled) this.operations.delete(id);
      }
    }
  }

  private track(ms: number): number {
    this.longestOperationMs = Math.max(this.longestOperationMs, ms);
    return ms;
  }

  /** How long an operation on a NIC (or a scale-set VM) runs. */
  durationOf(kind: 'nic' | 'vm'): number {
    if (this.times.timing === 'fast') return this.times.operationMs;
    const [min, max] = REALISTIC_OPERATION_MS[kind];
    return Math.round(min + this.times.random() * (max - min));
  }

  /** The resource group an operation's resource is in (undefined: no such operation). */
  scope(id: string): string | undefined {
    return this.operations.get(id)?.resourceGroupId;
  }

  /** An operation's status as last settled (undefined: no such operation). */
  status(id: string): OperationStatus | undefined {
    const op = this.operations.get(id);
    if (!op) return undefined;
    if (!op.settled) return { status: 'InProgress' };
    if (op.failure)
      return { status: 'Failed', error: { code: op.failure.code, message: op.failure.message } };
    return { status: 'Succeeded' };
  }
}
