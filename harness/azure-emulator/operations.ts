// The long-running operations NIC and scale-set VM PUTs start, polled
// through Azure-AsyncOperation. They complete lazily: whoever looks after
// `doneAt` sees them finished, so an injected clock makes them deterministic.
import { randomUUID } from 'node:crypto';
import type { ArmObject } from './arm-object.ts';
import type { ArmHttpError, ErrorDetail } from './errors.ts';
import type { AddressMoves } from './nic-put.ts';

export type OperationTiming = 'fast' | 'realistic';

/** Realistic operation durations, ms: [shortest, longest]. */
export const REALISTIC_OPERATION_MS = { nic: [10_000, 60_000], vm: [30_000, 120_000] } as const;

export interface Operation {
  id: string;
  /** What the operation is called in ARM's messages (e.g. PutNetworkInterfaceOperation). */
  name: string;
  nicKey: string;
  /** The resource group of the resource the operation writes (where its polls are authorized). */
  resourceGroupId: string;
  doneAt: number;
  failure?: ArmHttpError;
  /** Canceled: superseded by a later operation (`supersededBy`, its id and name). */
  canceled?: { id: string; name: string };
  /** The NIC before the write and the addresses it moved, to undo it when superseded. */
  undo?: { before: ArmObject; moves: AddressMoves };
  settled: boolean;
}

export interface OperationStatus {
  status: 'InProgress' | 'Succeeded' | 'Failed' | 'Canceled';
  error?: { code: string; message: string; details?: ErrorDetail[] };
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

  /** A new operation on the NIC at `nicKey`, not recorded yet (add); `ms` overrides its duration. */
  begin(nicKey: string, resourceGroupId: string, kind: 'nic' | 'vm', ms?: number): Operation {
    return {
      id: randomUUID(),
      name:
        kind === 'nic' ? 'PutNetworkInterfaceOperation' : 'PutVirtualMachineScaleSetVMOperation',
      nicKey,
      resourceGroupId,
      doneAt: this.times.now() + this.track(ms ?? this.durationOf(kind)),
      settled: false,
    };
  }

  /** The operation still running on the NIC at `nicKey`, if one is. */
  runningOn(nicKey: string): Operation | undefined {
    const id = this.busy.get(nicKey);
    return id === undefined ? undefined : this.operations.get(id);
  }

  /**
   * Ends a running operation Canceled, superseded by a later one on the
   * same resource (its id and name); the NIC is free again.
   */
  supersede(op: Operation, by: { id: string; name: string }): void {
    op.canceled = by;
    op.settled = true;
    if (this.busy.get(op.nicKey) === op.id) this.busy.delete(op.nicKey);
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
      if (!op.failure && !op.canceled) succeeded(op.nicKey);
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
    // A superseded operation's status, as ARM's Network provider words it
    // (quoted in radius-project/radius, its Azure load balancer handler, for
    // a PutLoadBalancerOperation; kubernetes-sigs/cloud-provider-azure's
    // pkg/provider/azure_backoff.go matches the code): status Canceled, code Canceled, the detail
    // CanceledAndSupersededDueToAnotherOperation naming both operations.
    if (op.canceled) {
      return {
        status: 'Canceled',
        error: {
          code: 'Canceled',
          message: 'Operation was canceled.',
          details: [
            {
              code: 'CanceledAndSupersededDueToAnotherOperation',
              message: `Operation ${op.name} (${op.id}) was canceled and superseded by operation ${op.canceled.name} (${op.canceled.id}).`,
            },
          ],
        },
      };
    }
    if (op.failure)
      return { status: 'Failed', error: { code: op.failure.code, message: op.failure.message } };
    return { status: 'Succeeded' };
  }
}
