// Kubernetes Events (core/v1) for the things an operator should see with
// `kubectl describe`: pool scaled, invalid input, subnet exhausted. Repeats of
// the same event on the same object are aggregated the way kubelet does it:
// the existing Event's `count` and `lastTimestamp` are bumped instead of
// creating a new object. Before that, client-go's correlator rules apply
// (event-correlator.ts): similar Events combined, and a spam filter per
// object. Recording never throws: a lost Event is logged, it must not break
// the control loop that reports it.
import { LeanCoreV1Api } from './lean/apis.ts';
import type { CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../log/logger.ts';
import { apiErrorInfo } from './errors.ts';
import { createEventCorrelator, type CorrelatorOptions } from './event-correlator.ts';
import type { EventDetails, InvolvedObject } from './event-types.ts';

export { eventKey, type EventDetails, type InvolvedObject } from './event-types.ts';

export interface EventRecorder {
  recordEvent(involved: InvolvedObject, details: EventDetails): Promise<void>;
  /** Resolves once every Event recorded so far has been written or given up. */
  flush(): Promise<void>;
}

/** The slice of CoreV1Api the recorder uses; tests pass a fake. */
export interface EventsApi {
  createNamespacedEvent(req: { namespace: string; body: CoreV1Event }): Promise<CoreV1Event>;
  replaceNamespacedEvent(req: {
    name: string;
    namespace: string;
    body: CoreV1Event;
  }): Promise<CoreV1Event>;
}

export interface EventRecorderOptions {
  /** Either a kubeconfig (the real API) or an explicit API (tests). */
  kc?: KubeConfig;
  api?: EventsApi;
  /** `source.component` and `reportingComponent`, e.g. "ipam-fulfiller". */
  component: string;
  /** `source.host` / `reportingInstance`, e.g. the node name. */
  host?: string;
  /** Prefix of every Event name, owned by the writer (event-names.ts). */
  namePrefix?: string;
  logger: Logger;
  now?: () => Date;
  /** Repeats within this window are aggregated; older ones start a new Event. */
  aggregateWindowMs?: number;
  /** How many distinct events are remembered for aggregation. */
  maxTracked?: number;
  /** The correlator's rules (event-correlator.ts); client-go's by default. */
  correlator?: Partial<CorrelatorOptions>;
}

/** Longest name of an object validated as a DNS subdomain (Event names are). */
const MAX_NAME = 253;

/**
 * An Event name unique enough: the object's name and a time-based suffix, as
 * kubelet does (`object.suffix`). With a writer's prefix (event-names.ts),
 * the part after the prefix has no dot (`prefix` + object with its dots made
 * dashes + `-` + suffix), so the name has one owner even when node names have
 * dots (manifests/sidecar/event-names-policy.yaml refuses any other). The
 * object part is cut so the whole stays a DNS subdomain of at most 253
 * characters (a prefix of more than ~239 characters, a node name of more
 * than ~218, leaves no room for the suffix: the API refuses the name).
 */
export function eventName(
  objectName: string,
  at: Date,
  random: () => number = Math.random,
  prefix = '',
): string {
  const suffix = (at.getTime() * 1000 + Math.floor(random() * 1000)).toString(16);
  const room = Math.max(0, MAX_NAME - prefix.length - suffix.length - 1);
  if (prefix === '') return `${objectName.slice(0, room).replace(/[-.]+$/, '')}.${suffix}`;
  const object = objectName.replaceAll('.', '-').slice(0, room).replace(/-+$/, '');
  return object === '' ? `${prefix}${suffix}` : `${prefix}${object}-${suffix}`;
}

export function createEventRecorder(options: EventRecorderOptions): EventRecorder {
  const api: EventsApi =
    options.api ??
    (() => {
      if (!options.kc) throw new Error('createEventRecorder needs kc or api');
      return options.kc.makeApiClient(LeanCoreV1Api);
    })();
  const now = options.now ?? (() => new Date());
  const windowMs = options.aggregateWindowMs ?? 10 * 60_000;
  const maxTracked = options.maxTracked ?? 1000;
  const log = options.logger;
  const correlator = createEventCorrelator(options.correlator);
  // Last Event written per key, in insertion order so the oldest is evicted first.
  const recent = new Map<string, CoreV1Event>();

  const remember = (key: string, event: CoreV1Event): void => {
    recent.delete(key);
    recent.set(key, event);
    while (recent.size > maxTracked) {
      const oldest = recent.keys().next().value;
      if (oldest === undefined) break;
      recent.delete(oldest);
    }
  };

  const create = async (
    key: string,
    involved: InvolvedObject,
    details: EventDetails,
    at: Date,
  ): Promise<void> => {
    const body: CoreV1Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        name: eventName(involved.name, at, Math.random, options.namePrefix),
        namespace: involved.namespace,
      },
      involvedObject: { ...involved },
      type: details.type,
      reason: details.reason,
      message: details.message,
      count: 1,
      firstTimestamp: at,
      lastTimestamp: at,
      source: { component: options.component, ...(options.host ? { host: options.host } : {}) },
      reportingComponent: options.component,
      reportingInstance: options.host ?? options.component,
    };
    const created = await api.createNamespacedEvent({ namespace: involved.namespace, body });
    remember(key, created?.metadata?.name ? created : body);
  };

  // Writes about one key go one after the other, as client-go's single
  // sink does: a count bump sent while the previous write of the same Event
  // is under way would carry its old resourceVersion and be refused (409).
  const queues = new Map<string, Promise<void>>();
  const inFlight = new Set<Promise<void>>();

  const write = async (
    key: string,
    involved: InvolvedObject,
    details: EventDetails,
    at: Date,
  ): Promise<void> => {
    try {
      const previous = recent.get(key);
      const lastAt = previous?.lastTimestamp ? new Date(previous.lastTimestamp).getTime() : 0;
      if (previous?.metadata?.name && at.getTime() - lastAt <= windowMs) {
        const body: CoreV1Event = {
          ...previous,
          count: (previous.count ?? 1) + 1,
          lastTimestamp: at,
          // A combined Event shows the latest of the messages it stands for.
          message: details.message,
        };
        try {
          const replaced = await api.replaceNamespacedEvent({
            name: previous.metadata.name,
            namespace: involved.namespace,
            body,
          });
          remember(key, replaced?.metadata?.name ? replaced : body);
        } catch (err) {
          // Gone or changed behind our back: start a fresh Event.
          const code = apiErrorInfo(err).statusCode;
          if (code !== 404 && code !== 409) throw err;
          recent.delete(key);
          await create(key, involved, details, at);
        }
      } else {
        await create(key, involved, details, at);
      }
      log.debug('event recorded', logFields(involved, details));
    } catch (err) {
      log.warn('event not recorded', {
        ...logFields(involved, details),
        error: apiErrorInfo(err).message,
      });
    }
  };

  const record = (involved: InvolvedObject, asked: EventDetails): Promise<void> => {
    const at = now();
    const correlated = correlator.correlate(involved, asked, at.getTime());
    if (correlated.skip) {
      log.debug('event dropped by the spam filter', logFields(involved, asked));
      return Promise.resolve();
    }
    const { key, details } = correlated;
    const p = (queues.get(key) ?? Promise.resolve()).then(() => write(key, involved, details, at));
    queues.set(key, p);
    void p.then(() => {
      if (queues.get(key) === p) queues.delete(key);
    });
    return p;
  };

  return {
    recordEvent(involved, details) {
      const p = record(involved, details).finally(() => inFlight.delete(p));
      inFlight.add(p);
      return p;
    },
    async flush() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
  };
}

/** What a log line about an Event says of it. */
function logFields(involved: InvolvedObject, details: EventDetails): Record<string, string> {
  return { reason: details.reason, object: involved.name, ...aboutNode(involved) };
}

/** `{node}` when the object is a node's (its Node or its NNC, named after it): logs say whom they are about. */
export function aboutNode(involved: InvolvedObject): { node?: string } {
  return involved.kind === 'Node' || involved.kind === 'NodeNetworkConfig'
    ? { node: involved.name }
    : {};
}

/** A recorder that drops everything, for tests and dry runs. */
export const noopEventRecorder: EventRecorder = {
  recordEvent: async () => {},
  flush: async () => {},
};
