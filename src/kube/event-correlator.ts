// What client-go's event correlator does before an Event reaches the API
// (k8s.io/client-go/tools/record/events_cache.go, NewEventCorrelator's
// defaults), so that a component fed hostile or flapping input cannot flood
// etcd with Events, as kubelet and every controller-runtime manager cannot:
//
// - Aggregation: Events about one object with the same type and reason but
//   different messages, each within 10 minutes of the one before: from the
//   10th message on they go to one Event whose message is "(combined from
//   similar events): " and the latest message, counted up like any repeat.
// - Spam filter: each object gets a token bucket of 25 Events, refilled at
//   one every 5 minutes; an Event (or a repeat's count bump) without a token
//   is dropped.
//
// Pure: time comes in with each call. The recorder (events.ts) writes what
// it returns.
import { eventKey, type EventDetails, type InvolvedObject } from './event-types.ts';

export interface CorrelatorOptions {
  /** Distinct messages of one reason on one object before they are combined. */
  aggregateMaxEvents: number;
  /** Similar Events further apart than this start a fresh count. */
  aggregateIntervalMs: number;
  /** Events an object may have at once... */
  spamBurst: number;
  /** ...and one more every this many ms. */
  spamRefillMs: number;
  /** Objects (and reasons) remembered; the least recently seen are forgotten first. */
  maxTracked: number;
}

/** client-go's defaults (events_cache.go: defaultAggregateMaxEvents and its neighbours). */
export const CLIENT_GO_CORRELATOR: Readonly<CorrelatorOptions> = {
  aggregateMaxEvents: 10,
  aggregateIntervalMs: 600_000,
  spamBurst: 25,
  spamRefillMs: 300_000,
  maxTracked: 4096,
};

export const COMBINED_PREFIX = '(combined from similar events): ';

export type Correlated =
  | { skip: true }
  | {
      skip: false;
      /** What to write. */
      details: EventDetails;
      /** Repeats under the same key count up one Event (the combined one's is its reason's). */
      key: string;
    };

export interface EventCorrelator {
  correlate(involved: InvolvedObject, details: EventDetails, nowMs: number): Correlated;
}

/** The object, as the spam filter keys it (client-go's getSpamKey, less the source: one per recorder). */
export function objectKey(involved: InvolvedObject): string {
  return [
    involved.apiVersion,
    involved.kind,
    involved.namespace,
    involved.name,
    involved.uid ?? '',
  ].join('\u0000');
}

/** A Map used as an LRU: get moves an entry to the back, set evicts from the front. */
function lru<V>(max: number): { get(k: string): V | undefined; set(k: string, v: V): void } {
  const m = new Map<string, V>();
  return {
    get(k) {
      const v = m.get(k);
      if (v !== undefined) {
        m.delete(k);
        m.set(k, v);
      }
      return v;
    },
    set(k, v) {
      m.delete(k);
      m.set(k, v);
      while (m.size > max) m.delete(m.keys().next().value!);
    },
  };
}

export function createEventCorrelator(options: Partial<CorrelatorOptions> = {}): EventCorrelator {
  const o: CorrelatorOptions = { ...CLIENT_GO_CORRELATOR, ...options };
  const buckets = lru<{ tokens: number; at: number }>(o.maxTracked);
  const similar = lru<{ messages: Set<string>; lastAt: number }>(o.maxTracked);

  const aggregate = (
    involved: InvolvedObject,
    details: EventDetails,
    now: number,
  ): { details: EventDetails; key: string } => {
    const groupKey = eventKey(involved, { ...details, message: '' });
    let group = similar.get(groupKey);
    if (group === undefined || now - group.lastAt > o.aggregateIntervalMs) {
      group = { messages: new Set(), lastAt: now };
    }
    group.messages.add(details.message);
    group.lastAt = now;
    similar.set(groupKey, group);
    if (group.messages.size < o.aggregateMaxEvents) {
      return { details, key: eventKey(involved, details) };
    }
    // Keep the set at its bound; every later similar Event is combined.
    group.messages.delete(group.messages.values().next().value!);
    return {
      details: { ...details, message: COMBINED_PREFIX + details.message },
      key: `${groupKey}\u0000combined`,
    };
  };

  const takeToken = (involved: InvolvedObject, now: number): boolean => {
    const key = objectKey(involved);
    const b = buckets.get(key) ?? { tokens: o.spamBurst, at: now };
    const tokens = Math.min(o.spamBurst, b.tokens + Math.max(0, now - b.at) / o.spamRefillMs);
    const ok = tokens >= 1;
    buckets.set(key, { tokens: ok ? tokens - 1 : tokens, at: now });
    return ok;
  };

  return {
    correlate(involved, details, now) {
      const a = aggregate(involved, details, now);
      if (!takeToken(involved, now)) return { skip: true };
      return { skip: false, ...a };
    },
  };
}
