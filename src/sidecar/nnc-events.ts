// Events on the node's NNC, as the intake last took it (`kubectl describe nnc
// NODE`): what the monitor, the store's followers and the schedule signal
// have to tell an operator, mapped in events.ts. Nothing is recorded before
// the first NNC; pending Events are awaited on stop.
import type { KubeConfig } from '@kubernetes/client-node';
import { SIDECAR_EVENT_COMPONENT, sidecarEventPrefix } from '../kube/event-names.ts';
import { createEventRecorder, noopEventRecorder } from '../kube/events.ts';
import type { EventDetails, InvolvedObject } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import { GROUP, NNC_KIND, NNC_VERSION, type NodeNetworkConfig } from '../nnc/types.ts';
import type { SidecarOptions } from './options.ts';
import type { StopSteps } from './stop-steps.ts';

/** Records an Event on the node's NNC (nothing before one was seen, nor for undefined). */
export type RecordEvent = (details: EventDetails | undefined) => void;

export function eventsToNnc(
  input: {
    options: SidecarOptions;
    root: Logger;
    kc: KubeConfig;
    /** Off: nothing recorded (--dry-run, or tests). */
    enabled: boolean;
    /** The NNC the Events go to: the one the intake last took. */
    nnc: () => NodeNetworkConfig | undefined;
  },
  stops: StopSteps,
): RecordEvent {
  const { options, root, kc } = input;
  const recorder = input.enabled
    ? createEventRecorder({
        kc,
        component: SIDECAR_EVENT_COMPONENT,
        host: options.nodeName,
        namePrefix: sidecarEventPrefix(options.nodeName),
        logger: root.child({ component: 'events' }),
      })
    : noopEventRecorder;
  const pending = new Set<Promise<void>>();
  stops.push('events', () => Promise.all([...pending]));
  return (details) => {
    const current = input.nnc();
    if (details === undefined || current === undefined) return;
    const involved: InvolvedObject = {
      apiVersion: `${GROUP}/${NNC_VERSION}`,
      kind: NNC_KIND,
      name: options.nodeName,
      namespace: options.namespace,
      ...(current.metadata.uid ? { uid: current.metadata.uid } : {}),
    };
    const p = recorder.recordEvent(involved, details).finally(() => pending.delete(p));
    pending.add(p);
  };
}
