// The worker side of the worker host (worker-host.ts): the embedded nodes'
// sidecars and simulated kubelets in a worker thread of their own, so they
// use the second core while the API server, the fulfiller and the workload
// run on the first. Each sidecar is the real one (runSidecar, as in
// process), with its own token; each kubelet the same simulated kubelet as in
// process, acting as the admin and calling its node's sidecar over HTTP.
// They share one keep-alive connection pool to the API server and log to the
// run's log file. The thread answers the host's requests: start a sidecar or
// a kubelet, is a sidecar ready, stop either, how much CPU the thread has
// used, and close (every kubelet, every sidecar, then the pool and the log);
// and it reports, in batches, what its kubelets tell (pods Running, pods that
// ended waiting).
import { KubeConfig } from '@kubernetes/client-node';
import { parentPort, workerData } from 'node:worker_threads';
import { shareDispatchers, type SharedDispatchers } from '../../src/kube/shared-dispatcher.ts';
import { errorText } from '../../src/log/error-text.ts';
import { silentLogger, type Logger } from '../../src/log/logger.ts';
import { runSidecar, type RunningSidecar } from '../../src/sidecar/run.ts';
import type { PodEndedWaiting, PodWait } from '../kubelet/kubelet.ts';
import { startSimKubelet, type RunningSimKubelet } from '../kubelet/start.ts';
import { embeddedSidecarOptions } from './components.ts';
import { httpPodApi, type HttpPodApi } from './http-pod-api.ts';
import { fileLogger } from './log-file.ts';
import type {
  SidecarWorkerData,
  WorkerKubeletPlace,
  WorkerKubeletReport,
  WorkerReply,
  WorkerRequest,
} from './worker-protocol.ts';

const data = workerData as SidecarWorkerData;
const port = parentPort;
if (port === null) throw new Error('sidecar-worker.ts runs as a worker thread (worker-host.ts)');

const { logger, close: closeLog }: { logger: Logger; close: () => Promise<void> } = data.logFile
  ? fileLogger(data.logFile, data.logLevel)
  : { logger: silentLogger(), close: async () => {} };
const sidecars = new Map<string, RunningSidecar>();
const kubelets = new Map<string, RunningSimKubelet>();
let pool: SharedDispatchers | undefined;
/** The kubelets' configuration (the admin's, the same text for all) and their status calls. */
let admin: { text: string; kc: KubeConfig; statusCalls: HttpPodApi } | undefined;

/** A sidecar's own configuration, sharing the thread's connection pool. */
function ownKubeConfig(text: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  if (pool === undefined) pool = shareDispatchers(kc, { watches: 'own' });
  else pool.attach(kc);
  return kc;
}

/** What the kubelets told since the last report; sent once the current work is done. */
const told: Omit<WorkerKubeletReport, 'report'> = { running: [], endedWaiting: [] };
let reportQueued = false;
function tell(add: (t: typeof told) => void): void {
  add(told);
  if (reportQueued) return;
  reportQueued = true;
  setImmediate(sendReport);
}

/** What the kubelets told, if anything, sent now (the port keeps the order of messages). */
function sendReport(): void {
  reportQueued = false;
  if (told.running.length === 0 && told.endedWaiting.length === 0) return;
  const report: WorkerKubeletReport = { report: 'kubelets', ...told };
  told.running = [];
  told.endedWaiting = [];
  port?.postMessage(report);
}

function startKubelet(place: WorkerKubeletPlace): RunningSimKubelet {
  if (kubelets.has(place.name)) throw new Error(`a kubelet for ${place.name} already runs`);
  if (admin === undefined) {
    const kc = ownKubeConfig(place.kubeconfig);
    admin = { text: place.kubeconfig, kc, statusCalls: httpPodApi(kc) };
  } else if (admin.text !== place.kubeconfig) {
    throw new Error('every kubelet in the thread acts as the same admin');
  }
  const started = sidecars.get(place.name);
  if (started === undefined) throw new Error(`no sidecar runs for ${place.name} in this thread`);
  const kubelet = startSimKubelet({
    kc: admin.kc,
    statusCalls: admin.statusCalls,
    podSource: admin.statusCalls,
    nodeName: place.name,
    nodeIp: place.nodeIp,
    // The node's sidecar now: a lost store restarts it on the same port.
    sidecarUrl: () => sidecars.get(place.name)?.url ?? started.url,
    logger: logger.child({ component: 'kubelet', node: place.name }),
    onRunning: (wait: PodWait) => tell((t) => t.running.push(wait)),
    onEndedWaiting: (ended: PodEndedWaiting) => tell((t) => t.endedWaiting.push(ended)),
  });
  kubelets.set(place.name, kubelet);
  return kubelet;
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
    case 'startKubelet': {
      await startKubelet(req.kubelet).whenSynced();
      return { id: req.id, ok: true };
    }
    case 'settingUp': {
      const settingUp = kubelets.get(req.name)?.kubelet.waitingPods() ?? 0;
      // What was told before goes out before this answer: the host counts it first.
      sendReport();
      return { id: req.id, ok: true, settingUp };
    }
    case 'stopKubelet': {
      const kubelet = kubelets.get(req.name);
      kubelets.delete(req.name);
      await kubelet?.stop();
      return { id: req.id, ok: true };
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
      // Kubelets first: no CNI call reaches a stopping sidecar.
      await Promise.all([...kubelets.values()].map((k) => k.stop().catch(() => {})));
      kubelets.clear();
      admin?.statusCalls.close();
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
