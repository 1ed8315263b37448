// The harness's eye on the cluster: every sample reads the pods, NNCs and
// ClusterSubnetStates straight from the local API server's store, adds one
// timeline point, follows IP churn, notes when a subnet was exhausted, and
// checks the safety invariants. A violation counts only when it is still
// there in the next sample (pods and NNCs change through separate writes, so
// one snapshot can catch a release half-way through); persistent ones are
// kept, deduplicated, for the loud failure at the end. Pure of timers: the
// run decides when to call sample().
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import {
  checkClusterInvariants,
  persistentViolations,
  violationKey,
  type PodSnapshot,
  type Violation,
} from '../../src/sim/invariants.ts';
import { clusterSample, IpChurnTracker } from '../../src/sim/report/sample.ts';
import type { Sample } from '../../src/sim/summary.ts';

/** A ClusterSubnetState as the sampler reads it. */
export interface SubnetStateSnapshot {
  metadata?: { name?: string };
  status?: { exhausted?: boolean };
}

export interface ClusterSnapshot {
  pods: readonly PodSnapshot[];
  nncs: readonly NodeNetworkConfig[];
  subnets: readonly SubnetStateSnapshot[];
}

export interface ExhaustionSummary {
  /** Whether any subnet was seen exhausted during the run. */
  happened: boolean;
  /** Seconds from the start when it was first seen, or null. */
  firstAtSeconds: number | null;
  /** Seconds when no subnet was exhausted any more after that, or null. */
  recoveredAtSeconds: number | null;
  /** Samples in which some subnet was exhausted. */
  exhaustedSamples: number;
}

/**
 * How long a node may be without any NNC while its pods run and a
 * fulfiller replica leads: the window in which a terminating NNC is let go
 * and its successor is created, a failed create's retries included. Time
 * while no replica leads (chaos kills both around a Node deletion, and a
 * killed leader's Lease runs out before the standby takes it) is not
 * counted: nothing can create an NNC then. A record lost in that window
 * shows as addresses on other nodes besides.
 */
export const NNC_MISSING_GRACE_SECONDS = 15;

export class ClusterSampler {
  readonly samples: Sample[] = [];
  readonly churn = new IpChurnTracker();
  /** Persistent violations, first occurrence of each. */
  readonly violations: Violation[] = [];
  private readonly seenViolations = new Set<string>();
  private previous: Violation[] = [];
  /** Seconds each violation of a node without an NNC has lasted while a fulfiller led. */
  private missingFor = new Map<string, number>();
  /** When (run seconds) each such violation was first seen in its current stretch. */
  private missingSince = new Map<string, number>();
  private lastSampleAt: number | undefined;
  private exhaustion: ExhaustionSummary = {
    happened: false,
    firstAtSeconds: null,
    recoveredAtSeconds: null,
    exhaustedSamples: 0,
  };
  private last: ClusterSnapshot | undefined;

  /**
   * Takes one sample at `tSeconds`; returns the violations that became
   * persistent now. `fulfillerLeads`: some fulfiller replica leads (always,
   * but under chaos); the time since the last sample counts toward a node
   * without an NNC only then.
   */
  sample(tSeconds: number, snap: ClusterSnapshot, fulfillerLeads = true): Violation[] {
    this.last = snap;
    this.samples.push(clusterSample(tSeconds, snap.pods, snap.nncs));
    this.churn.observe(snap.nncs);
    const exhausted = snap.subnets.some((s) => s.status?.exhausted === true);
    const e = this.exhaustion;
    if (exhausted) {
      e.exhaustedSamples += 1;
      if (!e.happened) {
        e.happened = true;
        e.firstAtSeconds = round1(tSeconds);
      }
      e.recoveredAtSeconds = null;
    } else if (e.happened && e.recoveredAtSeconds === null) {
      e.recoveredAtSeconds = round1(tSeconds);
    }
    const current = checkClusterInvariants(snap.pods, snap.nncs);
    const step =
      fulfillerLeads && this.lastSampleAt !== undefined ? tSeconds - this.lastSampleAt : 0;
    this.lastSampleAt = tSeconds;
    const lasted = new Map<string, number>();
    const since = new Map<string, number>();
    for (const v of current)
      if (v.nncMissing) {
        const key = violationKey(v);
        const before = this.missingFor.get(key);
        lasted.set(key, before === undefined ? 0 : before + step);
        since.set(key, this.missingSince.get(key) ?? tSeconds);
      }
    this.missingFor = lasted;
    this.missingSince = since;
    const fresh: Violation[] = [];
    for (const v of persistentViolations(this.previous, current)) {
      const key = violationKey(v);
      // A node between its NNC and that NNC's successor: counted once it lasts.
      if (v.nncMissing && lasted.get(key)! < NNC_MISSING_GRACE_SECONDS) continue;
      if (this.seenViolations.has(key)) continue;
      this.seenViolations.add(key);
      // When it began says which actors to read in the component log.
      const said = v.nncMissing
        ? {
            ...v,
            message: `${v.message} (since ${round1(since.get(key)!)} s of the run, ${round1(lasted.get(key)!)} s of it while a fulfiller led)`,
          }
        : v;
      this.violations.push(said);
      fresh.push(said);
    }
    this.previous = current;
    return fresh;
  }

  exhaustionSummary(): ExhaustionSummary {
    return { ...this.exhaustion };
  }

  /** Pods that hold a place on a node but have no IP yet, in the latest sample. */
  waitingPods(): number {
    let n = 0;
    for (const p of this.last?.pods ?? []) {
      const phase = p.status?.phase;
      if (p.spec?.hostNetwork === true || phase === 'Succeeded' || phase === 'Failed') continue;
      if (!p.status?.podIP) n += 1;
    }
    return n;
  }

  /** Whether the timeline shows the pool growing and later shrinking (requested IPs). */
  scaling(): { up: boolean; down: boolean } {
    let peak = 0;
    let up = false;
    let down = false;
    const first = this.samples[0]?.requested ?? 0;
    for (const s of this.samples) {
      if (s.requested > first && s.requested > peak) up = true;
      if (s.requested > peak) peak = s.requested;
      else if (up && s.requested < peak) down = true;
    }
    return { up, down };
  }
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}
