// What an operator sees of "the store follows the pods": every reclaimed
// leak (a gone or finished pod's IP after the grace, a recreated sandbox's
// older IP at once) and every adoption is one warning log line naming pod,
// IP and reason, one Event on the node's NNC (LeakedIPReclaimed,
// PodIPAdopted) and a counter; a conflict is a warning, an Event
// (PodIPConflict) and a counter. The Event texts are pure functions.
import type { PodNotice } from '../ipstore/follow-pods.ts';
import type { Conflict } from '../ipstore/pod-plan.ts';
import type { IpRecord } from '../ipstore/types.ts';
import type { EventDetails } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { LeakMetrics, ReclaimReason } from '../metrics/leaks.ts';

export const LEAK_EVENT_REASONS = {
  reclaimed: 'LeakedIPReclaimed',
  adopted: 'PodIPAdopted',
  conflict: 'PodIPConflict',
} as const;

const WHY: Record<ReclaimReason, string> = {
  'pod-deleted': 'its pod is gone from the node',
  'pod-completed': 'its pod has finished (Succeeded or Failed)',
  'sandbox-recreated': 'its pod asked again under a new sandbox',
};

function podOf(record: IpRecord): string {
  return record.pod ? `${record.pod.podNamespace}/${record.pod.podName}` : '?';
}

export function reclaimedEvent(
  record: IpRecord,
  reason: ReclaimReason,
  absentMs?: number,
): EventDetails {
  const since = absentMs !== undefined ? ` for ${Math.round(absentMs / 100) / 10} s` : '';
  return {
    type: 'Warning',
    reason: LEAK_EVENT_REASONS.reclaimed,
    message: `released leaked IP ${record.ip} (${record.id}) of pod ${podOf(record)}: ${WHY[reason]}${since} and no CNI release came`,
  };
}

export function adoptedEvent(record: IpRecord, previous: IpRecord): EventDetails {
  const was =
    previous.state === 'Assigned' ? `held for gone pod ${podOf(previous)}` : previous.state;
  return {
    type: 'Warning',
    reason: LEAK_EVENT_REASONS.adopted,
    message: `pod ${podOf(record)} reports ${record.ip} (${record.id}), which the IP store had ${was}: adopted, never handed to another pod`,
  };
}

export function conflictEvent(c: Conflict): EventDetails {
  return {
    type: 'Warning',
    reason: LEAK_EVENT_REASONS.conflict,
    message: `address ${c.ip} reported by pod ${c.pods.join(', ')}: ${c.reason}; the address is held, not given out`,
  };
}

export interface LeakCounts {
  reclaimed: Record<ReclaimReason, number>;
  adopted: number;
  conflicts: number;
}

/** Logs, records and counts every notice; `record` sends an Event to the node's NNC. */
export class LeakReporter {
  readonly counts: LeakCounts = {
    reclaimed: { 'pod-deleted': 0, 'pod-completed': 0, 'sandbox-recreated': 0 },
    adopted: 0,
    conflicts: 0,
  };
  readonly #log: Logger;
  readonly #record: (details: EventDetails) => void;
  readonly #metrics: LeakMetrics;

  constructor(options: {
    logger: Logger;
    record: (details: EventDetails) => void;
    metrics: LeakMetrics;
  }) {
    this.#log = options.logger;
    this.#record = options.record;
    this.#metrics = options.metrics;
  }

  /** A notice of the pod follower. */
  notice(n: PodNotice): void {
    if (n.type === 'reclaimed') this.reclaimed(n.record, n.reason, n.absentMs);
    else if (n.type === 'adopted') {
      this.counts.adopted += 1;
      this.#metrics.adopted();
      this.#log.warn('pod IP adopted', {
        pod: podOf(n.record),
        ip: n.record.ip,
        id: n.record.id,
        was: n.previous.state,
        ...(n.previous.pod ? { previousPod: podOf(n.previous) } : {}),
      });
      this.#record(adoptedEvent(n.record, n.previous));
    } else {
      this.counts.conflicts += 1;
      this.#metrics.conflict();
      this.#log.warn('pod IP conflict', { ...n.conflict });
      this.#record(conflictEvent(n.conflict));
    }
  }

  /** A leaked IP released: by the pod follower, or a recreated sandbox's older one. */
  reclaimed(record: IpRecord, reason: ReclaimReason, absentMs?: number): void {
    this.counts.reclaimed[reason] += 1;
    this.#metrics.reclaimed(reason);
    this.#log.warn('leaked IP reclaimed', {
      pod: podOf(record),
      ip: record.ip,
      id: record.id,
      reason,
      ...(record.pod ? { infraContainerID: record.pod.infraContainerID } : {}),
      ...(absentMs !== undefined ? { absentSeconds: absentMs / 1000 } : {}),
    });
    this.#record(reclaimedEvent(record, reason, absentMs));
  }
}
