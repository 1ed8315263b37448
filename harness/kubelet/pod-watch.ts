// The simulated kubelet's pods, listed and then watched over a plain HTTP
// stream: what the client-node informer (kube.ts, watchNodePods) does for a
// kubelet, without fetch and web streams between the socket and the JSON
// lines. The embedded cluster runs a thousand kubelets, each seeing every
// pod of its node twice (created, then Running), and the informer's fetch,
// web streams and client-node held 8-12 % of each thread's profile
// (docs/decisions/0029).
// The loop: list (the handler hears every pod listed, and a delete for each
// pod it knew that the list no longer has), then watch from the list's
// resourceVersion with bookmarks; a watch that ends is resumed from the last
// version seen; 410 Gone (history compacted) lists again; any other failure,
// and a watch that ended without a line, waits a backoff with jitter, reset
// once a watch delivers. stop() aborts
// the request or the wait at once.
import type { V1Pod } from '@kubernetes/client-node';
import { Backoff, DEFAULT_BACKOFF, type BackoffOptions } from '../../src/kube/backoff.ts';
import { errorText } from '../../src/log/error-text.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { NodePodHandler } from './kube.ts';

/** Which pods: a namespace (or all) and the selectors. */
export interface PodQuery {
  namespace?: string;
  fieldSelector: string;
  labelSelector?: string;
}

/** An open watch: its lines arrive through the callbacks given to watchPods. */
export interface PodStream {
  abort(): void;
}

/** The two HTTP calls the loop makes (http-pod-api.ts implements them). */
export interface PodListWatch {
  /** The pods and the list's resourceVersion; rejects with `statusCode` on an error status. */
  listPods(query: PodQuery): Promise<{ items: V1Pod[]; resourceVersion: string }>;
  /** Opens a watch; `onLine` gets each JSON line, `onEnd` once (an error, or undefined when the server ended it). */
  watchPods(
    query: PodQuery,
    resourceVersion: string,
    onLine: (line: string) => void,
    onEnd: (error?: Error) => void,
  ): PodStream;
}

export interface LeanPodWatchOptions {
  source: PodListWatch;
  query: PodQuery;
  handler: NodePodHandler;
  logger: Logger;
  backoff?: BackoffOptions;
  random?: () => number;
}

export interface LeanPodWatch {
  /** Resolves at the first list; rejects if stopped before. */
  whenSynced(): Promise<void>;
  stop(): Promise<void>;
}

interface WatchLine {
  type?: string;
  object?: V1Pod & { code?: number; message?: string };
}

const keyOf = (pod: V1Pod): string =>
  `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;

/** A watch that ended on 410 Gone: list again. */
class Gone extends Error {}

export function leanPodWatch(options: LeanPodWatchOptions): LeanPodWatch {
  const { source, query, handler, logger: log } = options;
  const backoff = new Backoff(options.backoff ?? DEFAULT_BACKOFF, options.random);
  const known = new Map<string, V1Pod>();
  let resourceVersion: string | undefined;
  let stopped = false;
  let stream: PodStream | undefined;
  let wake: (() => void) | undefined;
  let resolveSynced: () => void = () => {};
  let rejectSynced: (error: Error) => void = () => {};
  const synced = new Promise<void>((resolve, reject) => {
    resolveSynced = resolve;
    rejectSynced = reject;
  });
  synced.catch(() => {}); // only an error for those who wait on it

  const list = async (): Promise<void> => {
    const { items, resourceVersion: rv } = await source.listPods(query);
    if (stopped) return;
    const now = new Set<string>();
    for (const pod of items) {
      const key = keyOf(pod);
      now.add(key);
      known.set(key, pod);
      handler.onPod(pod);
    }
    for (const [key, pod] of known) {
      if (now.has(key)) continue;
      known.delete(key);
      handler.onPodDeleted(pod);
    }
    resourceVersion = rv;
    resolveSynced();
  };

  const apply = (line: string): void => {
    const event = JSON.parse(line) as WatchLine;
    const pod = event.object;
    if (event.type === 'ERROR') {
      if (pod?.code === 410) throw new Gone(pod.message ?? 'resourceVersion too old');
      throw new Error(`watch error ${pod?.code ?? '?'}: ${pod?.message ?? line.slice(0, 200)}`);
    }
    if (pod === undefined) throw new Error(`watch line without an object: ${line.slice(0, 200)}`);
    const rv = pod.metadata?.resourceVersion;
    if (rv) resourceVersion = rv;
    if (event.type === 'BOOKMARK') return;
    backoff.reset(); // the watch delivers
    if (event.type === 'DELETED') {
      known.delete(keyOf(pod));
      handler.onPodDeleted(pod);
    } else if (event.type === 'ADDED' || event.type === 'MODIFIED') {
      known.set(keyOf(pod), pod);
      handler.onPod(pod);
    }
  };

  /** One watch, until the server ends it (resolves) or it fails (rejects). */
  const watchOnce = (from: string): Promise<void> =>
    new Promise((resolve, reject) => {
      let failed: Error | undefined;
      let lines = 0;
      stream = source.watchPods(
        query,
        from,
        (line) => {
          lines += 1;
          if (failed) return;
          try {
            apply(line);
          } catch (error) {
            failed = error as Error;
            stream?.abort();
          }
        },
        (error) => {
          stream = undefined;
          // kube-apiserver says a version is too old either way: an ERROR event
          // in the stream, or the watch request answered 410 (client-go's
          // reflector lists again on both: apierrors.IsResourceExpired/IsGone).
          if (error && (error as { statusCode?: number }).statusCode === 410)
            return reject(new Gone(error.message));
          // A watch ended before it said anything is retried after a backoff, not at once.
          const why =
            failed ?? error ?? (lines === 0 ? new Error('the watch ended empty') : undefined);
          if (why) reject(why);
          else resolve();
        },
      );
    });

  const wait = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const run = async (): Promise<void> => {
    while (!stopped) {
      try {
        if (resourceVersion === undefined) await list();
        else await watchOnce(resourceVersion);
      } catch (error) {
        if (stopped) break;
        if (error instanceof Gone) {
          log.info('pod watch: history compacted, listing again', { error: error.message });
          resourceVersion = undefined;
          continue;
        }
        const delayMs = backoff.next();
        log.warn('pod watch failed', { error: errorText(error), delayMs });
        await wait(delayMs);
      }
    }
  };
  const running = run();

  return {
    whenSynced: () => synced,
    async stop() {
      if (stopped) return running;
      stopped = true;
      stream?.abort();
      wake?.();
      rejectSynced(new Error('pod watch stopped before its first list'));
      await running;
    },
  };
}
