// What an operator sees with `kubectl describe nnc NODE`: pure mappings from
// the monitor's outcomes and events (and the store's inventory changes) to
// Kubernetes Event details. The recorder (src/kube/events.ts) aggregates
// repeats, so a scaler that stays invalid is one Event with a count.
import type { EventDetails } from '../kube/events.ts';
import type { IpRecord } from '../ipstore/types.ts';
import type { MonitorEvent, ReconcileOutcome } from '../monitor/types.ts';

export const REASONS = {
  scaled: 'PoolScaled',
  scalerInvalid: 'ScalerInvalid',
  nncInvalid: 'NodeNetworkConfigInvalid',
  nncRecreated: 'NodeNetworkConfigRecreated',
  assignedVanished: 'AssignedIPVanished',
  markFailed: 'MarkPendingReleaseFailed',
} as const;

export function outcomeEvent(outcome: ReconcileOutcome): EventDetails | undefined {
  if (outcome.kind !== 'scaled') return undefined;
  const marked = outcome.marked > 0 ? `, ${outcome.marked} IPs marked PendingRelease` : '';
  return {
    type: 'Normal',
    reason: REASONS.scaled,
    message: `pool scaled from ${outcome.from} to ${outcome.to} IPs (demand ${outcome.demand}${outcome.exhausted ? ', subnet exhausted' : ''}${marked})`,
  };
}

export function monitorEvent(event: MonitorEvent): EventDetails | undefined {
  switch (event.type) {
    case 'scaler-invalid':
      return {
        type: 'Warning',
        reason: REASONS.scalerInvalid,
        message: `status.scaler.${event.field}: ${event.message}`,
      };
    case 'nnc-invalid':
      return { type: 'Warning', reason: REASONS.nncInvalid, message: event.reason };
    case 'nnc-recreated':
      return {
        type: 'Warning',
        reason: REASONS.nncRecreated,
        message: `NodeNetworkConfig recreated (uid ${event.uid}): its spec is written again`,
      };
    case 'mark-failed':
      return {
        type: 'Warning',
        reason: REASONS.markFailed,
        message: `marking ${event.count} IPs PendingRelease failed: ${event.error}`,
      };
    default:
      return undefined;
  }
}

export function vanishedEvent(records: readonly IpRecord[]): EventDetails | undefined {
  if (records.length === 0) return undefined;
  const list = records
    .slice(0, 10)
    .map((r) => `${r.ip} (${r.id}, pod ${r.pod ? `${r.pod.podNamespace}/${r.pod.podName}` : '?'})`)
    .join(', ');
  const more = records.length > 10 ? ` and ${records.length - 10} more` : '';
  return {
    type: 'Warning',
    reason: REASONS.assignedVanished,
    message: `Assigned IP vanished from status: ${list}${more}; kept for its pod`,
  };
}
