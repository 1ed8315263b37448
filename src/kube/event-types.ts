// What an Event is about and what it says, shared by the recorder
// (events.ts) and the correlator (event-correlator.ts).

export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
}

export interface EventDetails {
  type: 'Normal' | 'Warning';
  /** UpperCamelCase, e.g. "PoolScaled". */
  reason: string;
  message: string;
}

/** Key under which repeats are counted up: the object, type, reason and message. */
export function eventKey(involved: InvolvedObject, details: EventDetails): string {
  return [
    involved.namespace,
    involved.kind,
    involved.name,
    involved.uid ?? '',
    details.type,
    details.reason,
    details.message,
  ].join('\u0000');
}
