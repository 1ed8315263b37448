// A component host (components.ts) that runs the nodes' sidecars and a share
// of their simulated kubelets in one worker thread (sidecar-worker.ts) and
// the fulfiller in this one. The embedded cluster is one process; with
// everything on one thread it uses one core, and a thousand nodes' pod
// creations queue behind each other there. The sidecars (their IP stores,
// node APIs and watches) move to the second core, and with them a share of
// the kubelets (their pod watches, CNI calls and status writes), so that
// both threads are about as busy; the API server, the fulfiller, the
// workload and the other kubelets stay here (bench/embedded.ts prints each
// thread's CPU time).
// They are the real sidecars, each with its own token; only their handles
// cross the thread (URL, readiness, stop), so what reads a sidecar's or a
// kubelet's insides (the leak figures) needs the in-process host. What the
// kubelets tell (pods Running, pods that ended waiting) comes back in
// batches, to the callbacks each was started with. threadCpuMs() says how
// much CPU the thread has used. close() stops the kubelets and sidecars
// still running and ends the thread.
import { Worker } from 'node:worker_threads';
import type { LogLevel } from '../../src/log/logger.ts';
import {
  inProcessHost,
  type ComponentHost,
  type KubeletPlace,
  type NodeAgent,
  type NodeKubelet,
} from './components.ts';
import type {
  SidecarTuning,
  SidecarWorkerData,
  WorkerKubeletReport,
  WorkerReply,
  WorkerRequest,
} from './worker-protocol.ts';

export interface WorkerHostOptions {
  /** The run's log file, which the thread appends to; none: the sidecars log nothing. */
  logFile?: string;
  logLevel: LogLevel;
  tuning?: SidecarTuning;
  /**
   * The share of the nodes (0 to 1, spread evenly in node order) whose
   * kubelet runs in the thread beside its sidecar; the others run in this
   * one. Default 1/3, measured at 1,000 nodes x 30 pods: a third there
   * left both threads 74-80 % busy (35.5-36.5 s); a quarter took 37.9-38.1 s
   * and 0.42 36.2-36.5 s; all of them, the thread 81 % and this one 43 %
   * (44.8 s); none, the thread 54-56 % and this one 82-85 % (42-48 s).
   */
  kubeletShare?: number;
}

/** Whether node `index` is one of the `share` of nodes, spread evenly in node order. */
export function inShare(index: number, share: number): boolean {
  return Math.floor((index + 1) * share) > Math.floor(index * share);
}

/** A request before it gets its id. */
type Request = {
  [Op in WorkerRequest['op']]: Omit<Extract<WorkerRequest, { op: Op }>, 'id'>;
}[WorkerRequest['op']];

export interface WorkerHost extends ComponentHost {
  /** The share of the nodes whose kubelet runs in the thread (0 to 1). */
  readonly kubeletShare: number;
  /** The CPU time (user + system) the sidecars' thread has used so far, in ms. */
  threadCpuMs(): Promise<number>;
}

export function workerHost(opts: WorkerHostOptions): WorkerHost {
  const kubeletShare = opts.kubeletShare ?? 1 / 3;
  if (!(kubeletShare >= 0 && kubeletShare <= 1)) {
    throw new Error(`kubeletShare must be between 0 and 1, got ${kubeletShare}`);
  }
  const data: SidecarWorkerData = {
    ...(opts.logFile !== undefined ? { logFile: opts.logFile } : {}),
    logLevel: opts.logLevel,
    tuning: opts.tuning ?? {},
  };
  const worker = new Worker(new URL('./sidecar-worker.ts', import.meta.url), { workerData: data });
  const pending = new Map<number, { resolve(r: WorkerReply): void; reject(e: Error): void }>();
  let nextId = 1;
  let failed: Error | undefined;
  const failAll = (err: Error): void => {
    failed = err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  /** Where each node's kubelet reports (the callbacks it was started with). */
  const told = new Map<string, Pick<KubeletPlace, 'onRunning' | 'onEndedWaiting'>>();
  const report = (r: WorkerKubeletReport): void => {
    for (const wait of r.running) told.get(wait.node)?.onRunning?.(wait);
    for (const ended of r.endedWaiting) told.get(ended.node)?.onEndedWaiting?.(ended);
  };
  worker.on('message', (reply: WorkerReply | WorkerKubeletReport) => {
    if ('report' in reply) {
      report(reply);
      return;
    }
    const p = pending.get(reply.id);
    pending.delete(reply.id);
    p?.resolve(reply);
  });
  worker.on('error', (err) => failAll(err));
  worker.on('exit', (code) => failAll(new Error(`the sidecar thread ended (exit code ${code})`)));

  const ask = (req: Request): Promise<WorkerReply & { ok: true }> => {
    if (failed) return Promise.reject(failed);
    const id = nextId++;
    return new Promise<WorkerReply>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...req, id });
    }).then((reply) => {
      if (!reply.ok) throw new Error(reply.error);
      return reply;
    });
  };
  /** A node's kubelet in the thread; it answers once the kubelet's pod watch has listed. */
  const startKubelet = async (place: KubeletPlace): Promise<NodeKubelet> => {
    told.set(place.name, { onRunning: place.onRunning, onEndedWaiting: place.onEndedWaiting });
    await ask({
      op: 'startKubelet',
      kubelet: { name: place.name, nodeIp: place.nodeIp, kubeconfig: place.kc.exportConfig() },
    });
    return {
      whenSynced: () => Promise.resolve(),
      settingUp: async () => (await ask({ op: 'settingUp', name: place.name })).settingUp ?? 0,
      stop: async () => {
        await ask({ op: 'stopKubelet', name: place.name });
      },
    };
  };
  const inProcess = inProcessHost(opts.tuning);
  let closing: Promise<void> | undefined;

  return {
    startControlPlane: (args) => inProcess.startControlPlane(args),
    async startSidecar(place): Promise<NodeAgent> {
      const started = await ask({
        op: 'start',
        place: {
          name: place.name,
          index: place.index,
          stateDir: place.stateDir,
          kubeconfig: place.kc.exportConfig(),
          events: place.events,
          ...(place.listenPort !== undefined ? { listenPort: place.listenPort } : {}),
          ...(place.leakGraceSeconds !== undefined
            ? { leakGraceSeconds: place.leakGraceSeconds }
            : {}),
        },
      });
      const url = started.url ?? '';
      const port = started.port ?? 0;
      return {
        url,
        port,
        ready: async () => (await ask({ op: 'ready', name: place.name })).ready === true,
        stop: async () => {
          await ask({ op: 'stop', name: place.name });
        },
      };
    },
    kubeletShare,
    startKubelet: (place) => (inShare(place.index, kubeletShare) ? startKubelet(place) : undefined),
    threadCpuMs: async () => (await ask({ op: 'cpu' })).cpuMs ?? 0,
    close() {
      closing ??= (async () => {
        // The sidecars stop cleanly (each bounded by its own shutdown timeout), then the thread ends.
        await ask({ op: 'close' }).catch(() => {});
        await worker.terminate();
      })();
      return closing;
    },
  };
}
