// The worker side of the worker host (worker-host.ts): the embedded nodes'
// sidecars in a worker thread of their own, so they use the second core
// while the API server, the fulfiller, the kubelets and the workload run on
// the first. Each sidecar is the real one (runSidecar, as in process), with
// its own token; they share one keep-alive connection pool to the API server
// and log to the run's log file. The thread answers the host's requests:
// start a sidecar, is it ready, stop it, how much CPU the thread has used,
// and close (every sidecar, then the pool and the log).
import { KubeConfig } from '@kubernetes/client-node';
import { parentPort, workerData } from 'node:worker_threads';
import { shareDispatchers, type SharedDispatchers } from '../../src/kube/shared-dispatcher.ts';
import { errorText } from '../../src/log/error-text.ts';
import { silentLogger, type Logger } from '../../src/log/logger.ts';
import { runSidecar, type RunningSidecar } from '../../src/sidecar/run.ts';
import { embeddedSidecarOptions } from './components.ts';
import { fileLogger } from './log-file.ts';
import type { SidecarWorkerData, WorkerReply, WorkerRequest } from './worker-protocol.ts';

const data = workerData as SidecarWorkerData;
const port = parentPort;
if (port === null) throw new Error('sidecar-worker.ts runs as a worker thread (worker-host.ts)');

const { logger, close: closeLog }: { logger: Logger; close: () => Promise<void> } = data.logFile
  ? fileLogger(data.logFile, data.logLevel)
  : { logger: silentLogger(), close: async () => {} };
const sidecars = new Map<string, RunningSidecar>();
let pool: SharedDispatchers | undefined;

/** A sidecar's own configuration, sharing the thread's connection pool. */
function ownKubeConfig(text: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  if (pool === undefined) pool = shareDispatchers(kc, { watches: 'own' });
  else pool.attach(kc);
  return kc;
}

async function answer(req: WorkerRequest): Promise<WorkerReply> {
  switch (req.op) {
    case 'start': {
      const { place } = req;
      const sidecar = await runSidecar(embeddedSidecarOptions(place), {
        kc: ownKubeConfig(place.kubeconfig),
        logger,
        defaultMetrics: false,
        events: place.events,
        // Node state lives as long as the run: no fsync per commit (docs/decisions/0005).
        storeSynchronous: 'NORMAL',
        ...data.tuning,
      });
      sidecars.set(place.name, sidecar);
      return { id: req.id, ok: true, url: sidecar.url, port: sidecar.port };
    }
    case 'ready': {
      const ready = sidecars.get(req.name)?.monitor.snapshot().ready ?? false;
      return { id: req.id, ok: true, ready };
    }
    case 'stop': {
      const sidecar = sidecars.get(req.name);
      sidecars.delete(req.name);
      await sidecar?.stop();
      return { id: req.id, ok: true };
    }
    case 'cpu': {
      const { user, system } = process.threadCpuUsage();
      return { id: req.id, ok: true, cpuMs: (user + system) / 1000 };
    }
    case 'close': {
      await Promise.all([...sidecars.values()].map((s) => s.stop().catch(() => {})));
      sidecars.clear();
      await pool?.destroy();
      await closeLog();
      return { id: req.id, ok: true };
    }
  }
}

port.on('message', (req: WorkerRequest) => {
  answer(req).then(
    (reply) => port.postMessage(reply),
    (err: unknown) => port.postMessage({ id: req.id, ok: false, error: errorText(err) }),
  );
});
