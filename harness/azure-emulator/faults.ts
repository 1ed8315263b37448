// Faults the emulator can be told to answer with, before the real handling:
// throttling (429 with Retry-After), server errors, 412, slow answers. Each
// fault matches an operation (or any) and optionally one NIC, and fires a
// given number of times. A `landed` fault makes the change and still answers
// with the error, as a gateway that lost the answer would.
import type { OperationName } from './operation-names.ts';

export interface FaultSpec {
  /** Which requests it hits; absent: every one. */
  operation?: OperationName;
  /** Only requests on this NIC (name, case ignored). */
  nic?: string;
  /** HTTP status to answer; absent: no error, only `delayMs`. */
  status?: number;
  /** ARM error code in the body (default by status). */
  code?: string;
  /** Retry-After header, in seconds. */
  retryAfterSeconds?: number;
  /** Delay before answering (or before handling, when no status), in ms. */
  delayMs?: number;
  /** Handle the request as usual, then answer `status` anyway (an answer lost after the change). */
  landed?: boolean;
  /** How many requests it hits (default 1). */
  times?: number;
}

export interface Fault extends FaultSpec {
  remaining: number;
}

const DEFAULT_CODES: Record<number, string> = {
  412: 'PreconditionFailed',
  429: 'SubscriptionRequestsThrottled',
  500: 'InternalServerError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

export function defaultCode(status: number): string {
  return DEFAULT_CODES[status] ?? 'InjectedFault';
}

export class FaultQueue {
  private readonly faults: Fault[] = [];

  add(spec: FaultSpec): void {
    this.faults.push({ ...spec, remaining: spec.times ?? 1 });
  }

  clear(): void {
    this.faults.length = 0;
  }

  get pending(): number {
    return this.faults.reduce((n, f) => n + f.remaining, 0);
  }

  /** The first fault matching this request, consumed once; undefined when none. */
  take(operation: OperationName, nic: string | undefined): Fault | undefined {
    const i = this.faults.findIndex(
      (f) =>
        (f.operation === undefined || f.operation === operation) &&
        (f.nic === undefined || f.nic.toLowerCase() === nic?.toLowerCase()),
    );
    if (i < 0) return undefined;
    const fault = this.faults[i]!;
    fault.remaining--;
    if (fault.remaining <= 0) this.faults.splice(i, 1);
    return fault;
  }
}
