// Which API writes fail under chaos, decided per request from a seeded
// random source: each write fails with probability RATE, and whenever the
// faults so far fall behind RATE × writes the next write fails too, so the
// share of failed writes is never below RATE (the promise of `--chaos`).
// A failed write is 500 Internal Error, 429 Too Many Requests with
// Retry-After, or, on writes to an existing object (update, patch, delete),
// 409 Conflict as optimistic concurrency answers it; none of these is
// applied, except half of the 500s: those are applied and then answered 500
// (a timeout after etcd committed - the write landed, its answer is lost).
// A create never gets 409: that is AlreadyExists to a client, which no
// server says of an object it does not have. Pure of I/O: the API server
// asks decide().
import type { FaultPolicy, FaultRequest } from '../../apiserver/faults.ts';
import { WRITE_VERBS } from '../../apiserver/counters.ts';

export interface WriteFaultCounts {
  /** Write requests the API server received (create, update, patch, delete). */
  writes: number;
  /** Of those, received while faults were on (before disable()): at least RATE of them failed. */
  chaosWrites: number;
  /** Of those, answered with an injected fault. */
  faults: number;
  byStatus: Record<'409' | '429' | '500', number>;
  /** Of the 500s, those applied before the error was answered. */
  lostAnswers: number;
}

/** Retry-After of an injected 429, seconds: short, the run is short. */
export const RETRY_AFTER_SECONDS = 1;

export class WriteFaults {
  private readonly rate: number;
  private readonly random: () => number;
  private enabled = true;
  readonly counts: WriteFaultCounts = {
    writes: 0,
    chaosWrites: 0,
    faults: 0,
    byStatus: { '409': 0, '429': 0, '500': 0 },
    lostAnswers: 0,
  };

  constructor(rate: number, random: () => number) {
    if (!(rate >= 0 && rate <= 1)) throw new Error(`chaos rate must be in [0, 1], got ${rate}`);
    this.rate = rate;
    this.random = random;
  }

  /** Stops failing writes (the end of the run); writes are still counted. */
  disable(): void {
    this.enabled = false;
  }

  /** The fault for one request, or undefined to serve it. */
  decide(req: FaultRequest): ReturnType<FaultPolicy> {
    if (!(WRITE_VERBS as readonly string[]).includes(req.verb)) return undefined;
    const c = this.counts;
    c.writes += 1;
    if (!this.enabled || this.rate === 0) return undefined;
    c.chaosWrites += 1;
    // Served, would the faults fall below RATE of the writes? Then it fails.
    const behind = c.faults < Math.ceil(this.rate * c.chaosWrites - 1e-9);
    if (!behind && this.random() >= this.rate) return undefined;
    c.faults += 1;
    const choices =
      req.verb === 'create' ? (['500', '429'] as const) : (['500', '429', '409'] as const);
    const status = choices[Math.floor(this.random() * choices.length)] ?? '500';
    c.byStatus[status] += 1;
    if (status === '429') return { status: 429, retryAfterSeconds: RETRY_AFTER_SECONDS };
    if (status === '500' && this.random() < 0.5) {
      c.lostAnswers += 1;
      return { status: 500, afterCommit: true };
    }
    return { status: Number(status) };
  }

  /** The policy to install on the API server. */
  policy(): FaultPolicy {
    return (req) => this.decide(req);
  }
}
