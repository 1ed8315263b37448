// A component host (components.ts) that runs the nodes' sidecars in one
// worker thread (sidecar-worker.ts) and the fulfiller in this one. The
// embedded cluster is one process; with everything on one thread it uses one
// core, and a thousand nodes' pod creations queue behind each other there.
// The sidecars (their IP stores, node APIs and watches) are the share of the
// work that moves best (bench/embedded.ts's profile; the kubelets moved with
// them left that thread the busier one), so they get the second core. They
// are the real sidecars, each with its own token; only their handles cross
// the thread (URL, readiness, stop), so what reads a sidecar's insides (the
// leak figures) needs the in-process host. threadCpuMs() says how much CPU
// the thread has used (bench/embedded.ts prints it beside the main thread's).
// close() stops the sidecars still running and ends the thread.
import { Worker } from 'node:worker_threads';
import type { LogLevel } from '../../src/log/logger.ts';
import { inProcessHost, type ComponentHost, type NodeAgent } from './components.ts';
import type {
  SidecarTuning,
  SidecarWorkerData,
  WorkerReply,
  WorkerRequest,
} from './worker-protocol.ts';

export interface WorkerHostOptions {
  /** The run's log file, which the thread appends to; none: the sidecars log nothing. */
  logFile?: string;
  logLevel: LogLevel;
  tuning?: SidecarTuning;
}

/** A request before it gets its id. */
type Request = {
  [Op in WorkerRequest['op']]: Omit<Extract<WorkerRequest, { op: Op }>, 'id'>;
}[WorkerRequest['op']];

export interface WorkerHost extends ComponentHost {
  /** The CPU time (user + system) the sidecars' thread has used so far, in ms. */
  threadCpuMs(): Promise<number>;
}

export function workerHost(opts: WorkerHostOptions): WorkerHost {
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
  worker.on('message', (reply: WorkerReply) => {
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
