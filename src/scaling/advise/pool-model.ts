// A fast model of the pool under a policy, for tuning advice: the same pure
// policy (guarded as in the monitor) and scaling function, the write window,
// a control plane that fulfils each write after a delay, stale-id clears, and
// pods that wait first come first served while no IP is free. It skips what
// advice does not need (the store, the NNC, the pipeline), so a day of
// history runs in milliseconds; `simulate` runs the product's real path, and
// a test keeps this model within a few per cent of it.
import { guarded, type AnyPolicy } from '../policies/policy.ts';
import { percentile } from './percentile.ts';
import type { Scaler } from '../scaler.ts';
import { calculateTarget } from '../target.ts';

export interface DemandPoint {
  /** ms */
  at: number;
  demand: number;
}

export interface ModelOptions {
  points: readonly DemandPoint[];
  /** ms the run lasts from the first point. */
  durationMs: number;
  scaler: Scaler;
  policy: AnyPolicy;
  fulfilDelayMs: number;
  writeWindowMs?: number;
  /** The pool at the start (default: the target of the first demand). */
  initialPool?: number;
}

export interface ModelFigures {
  nncWrites: number;
  ipsAllocated: number;
  ipsReleased: number;
  idleIpSeconds: number;
  podWaitP50Seconds: number;
  podWaitP99Seconds: number;
  podWaitMaxSeconds: number;
  pods: number;
}

/** A min-heap of timed events would be faster; a sorted insert is plenty for advice. */
class Agenda {
  private readonly times: number[] = [];
  add(t: number): void {
    let lo = 0;
    let hi = this.times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.times[mid] as number) < t) lo = mid + 1;
      else hi = mid;
    }
    if (this.times[lo] !== t) this.times.splice(lo, 0, t);
  }
  next(): number | undefined {
    return this.times.shift();
  }
  peek(): number | undefined {
    return this.times[0];
  }
}

export function runPoolModel(o: ModelOptions): ModelFigures {
  const policy = guarded(o.policy);
  const windowMs = o.writeWindowMs ?? 500;
  const points = [...o.points].sort((a, b) => a.at - b.at);
  const start = points[0]?.at ?? 0;
  const end = start + o.durationMs;
  let memory: unknown = policy.initial();
  let demand = points[0]?.demand ?? 0;
  let target = calculateTarget(demand, o.scaler);
  let request = o.initialPool ?? target;
  let allocated = request;
  const fulfils: { at: number; to: number; clears: boolean }[] = [];
  let staleAt: number | undefined; // a clear is owed from then
  let lastWrite = Number.NEGATIVE_INFINITY;
  const f: ModelFigures = {
    nncWrites: 0,
    ipsAllocated: allocated, // as simulate counts the pool it starts with
    ipsReleased: 0,
    idleIpSeconds: 0,
    podWaitP50Seconds: 0,
    podWaitP99Seconds: 0,
    podWaitMaxSeconds: 0,
    pods: 0,
  };
  const waits: number[] = [];
  const queue: number[] = [];
  let running = 0;
  const agenda = new Agenda();
  let i = 0;
  let now = start;
  let last = start;
  const place = (): void => {
    const capacity = Math.min(allocated, request);
    while (running < capacity && queue.length > 0) {
      waits.push((now - (queue.shift() as number)) / 1000);
      running += 1;
    }
  };
  const setDemand = (d: number): void => {
    while (running + queue.length < d) queue.push(now);
    while (running + queue.length > d) {
      if (running > 0) running -= 1;
      else queue.pop();
    }
  };
  const write = (to: number): void => {
    f.nncWrites += 1;
    lastWrite = now;
    if (staleAt !== undefined) staleAt = undefined; // the owed clear rides along
    fulfils.push({ at: now + o.fulfilDelayMs, to, clears: to < request });
    agenda.add(now + o.fulfilDelayMs);
    request = to;
  };
  setDemand(demand);
  place();
  memory = policy.observe(memory, { at: start, demand, target });
  agenda.add(start);
  for (;;) {
    const nextPoint = points[i + 1]?.at;
    const nextEvent = agenda.peek();
    const t = Math.min(nextPoint ?? Infinity, nextEvent ?? Infinity);
    if (!Number.isFinite(t) || t > end) break;
    f.idleIpSeconds += (Math.max(0, allocated - demand) * (t - last)) / 1000;
    now = t;
    last = t;
    if (nextEvent === t) agenda.next();
    if (nextPoint === t) {
      i += 1;
      demand = (points[i] as DemandPoint).demand;
      target = calculateTarget(demand, o.scaler);
      memory = policy.observe(memory, { at: now, demand, target });
      setDemand(demand);
    }
    while (fulfils.length > 0 && (fulfils[0] as { at: number }).at <= now) {
      const done = fulfils.shift() as { at: number; to: number; clears: boolean };
      if (done.to > allocated) f.ipsAllocated += done.to - allocated;
      else f.ipsReleased += allocated - done.to;
      allocated = done.to;
      if (done.clears) {
        const wait = policy.staleClearMs ?? 0;
        if (wait > 0) {
          staleAt = now + wait;
          agenda.add(staleAt);
        } else {
          f.nncWrites += 1; // the clear of the released ids, at once
          lastWrite = now;
        }
      }
    }
    if (staleAt !== undefined && now >= staleAt) {
      f.nncWrites += 1;
      lastWrite = now;
      staleAt = undefined;
    }
    const d = policy.decide(memory, {
      now,
      demand,
      target,
      request,
      scaler: o.scaler,
      exhausted: false,
      allocated,
    });
    if (d.applied !== request) {
      if (now < lastWrite + windowMs) agenda.add(lastWrite + windowMs);
      else write(d.applied);
    }
    if (d.recheckAt !== undefined) agenda.add(d.recheckAt);
    place();
  }
  f.idleIpSeconds += (Math.max(0, allocated - demand) * Math.max(0, end - last)) / 1000;
  f.idleIpSeconds = Math.round(f.idleIpSeconds);
  f.pods = waits.length;
  const s = (v: number | undefined): number => Math.round((v ?? 0) * 1000) / 1000;
  f.podWaitP50Seconds = s(percentile(waits, 50));
  f.podWaitP99Seconds = s(percentile(waits, 99));
  f.podWaitMaxSeconds = s(percentile(waits, 100));
  return f;
}
