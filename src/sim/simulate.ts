// `pool-monitor simulate`: replays a demand trace through the product's path,
// in virtual time: the real pool monitor, the real node IP store (SQLite in
// memory) behind the same store port as the sidecar's, following the NNC
// through the same module. Only the control plane (one round of the node at
// a time, as the fulfiller works, at a backend's speed: virtual-node.ts,
// fulfil-timing.ts) and the pods are simulated. The run ends with the
// figures a platform team weighs a scaler by.
import { BehaviorSubject, Subject, tap } from 'rxjs';
import type Transport from 'winston-transport';
import { openIpStore } from '../ipstore/sqlite-store.ts';
import { followNnc } from '../ipstore/follow-nnc.ts';
import { asPoolIpStore } from '../ipstore/pool-adapter.ts';
import { createLogger, silentLogger } from '../log/logger.ts';
import { PoolMonitor } from '../monitor/pool-monitor.ts';
import type { ScalerSpec } from '../nnc/types.ts';
import type { IdleAccountView } from '../scaling/policies/budget/idle-budget.ts';
import type { AnyPolicy } from '../scaling/policies/policy.ts';
import { SteppedScheduler } from './stepped-scheduler.ts';
import { summarize, type Sample, type SimulationSummary } from './summary.ts';
import type { Trace } from './trace.ts';
import { VirtualNode, type ControlPlaneModel } from './virtual-node.ts';
import { roundDurations, type FulfilTiming } from './fulfil-timing.ts';
import { seededRandom } from './random.ts';

export interface SimulationOptions {
  trace: Trace;
  scaler: ScalerSpec;
  releaseDelaySeconds: number;
  /** The pool policy; overrides releaseDelaySeconds. */
  policy?: AnyPolicy;
  /**
   * Seconds a round of the control plane takes, fixed (`fulfilTiming`
   * overrides it): the status follows a spec write that long after its
   * round began.
   */
  fulfilDelaySeconds?: number;
  /** The backend whose speed the control plane has (fulfil-timing.ts); or a fixed time. */
  fulfilTiming?: FulfilTiming;
  /** Seeds the control plane's speed (default 1). */
  timingSeed?: number;
  /** How long one draw of the control plane's speed holds (ms; Infinity: the whole replay). */
  speedSpanMs?: number;
  /** `serial` (default: as the fulfiller works) or the idealised `side-by-side`. */
  controlPlane?: ControlPlaneModel;
  /** Where the decision log goes; none when absent. */
  logTransport?: Transport;
  /** Virtual start time of the replay, for log timestamps. */
  startTime?: Date;
  /** Stops the replay early (SIGINT/SIGTERM); the summary covers what ran. */
  signal?: AbortSignal;
}

export interface SimulationResult {
  summary: SimulationSummary;
  samples: Sample[];
  /** The policy's own idle account against CNS v2 at the end (policies with an idle budget). */
  account?: IdleAccountView;
  /** The control plane's rounds that changed the status, and their time in all (ms). */
  rounds: { count: number; ms: number };
  /** Each pod's wait for its IP (s), in the order they got one. */
  podWaitsSeconds: readonly number[];
}

/** The control plane's timing a run's options name: `fulfilTiming`, else the fixed `fulfilDelaySeconds`. */
export function timingOf(
  o: Pick<SimulationOptions, 'fulfilTiming' | 'fulfilDelaySeconds'>,
): FulfilTiming {
  if (o.fulfilTiming !== undefined) return o.fulfilTiming;
  if (o.fulfilDelaySeconds === undefined) {
    throw new Error('simulate needs a fulfil timing (fulfilTiming or fulfilDelaySeconds)');
  }
  return { fixedMs: o.fulfilDelaySeconds * 1000 };
}

export async function runSimulation(options: SimulationOptions): Promise<SimulationResult> {
  const { trace } = options;
  const scheduler = new SteppedScheduler();
  const start = (options.startTime ?? new Date('2026-01-01T00:00:00Z')).getTime();
  const logger = options.logTransport
    ? createLogger({
        level: 'info',
        transports: [options.logTransport],
        now: () => new Date(start + scheduler.now()),
      })
    : silentLogger();
  // The store keeps whole ms (a trace's times may have fractions).
  const store = openIpStore({ memory: true, now: () => start + Math.round(scheduler.now()) });
  const samples: Sample[] = [];
  const node = new VirtualNode({
    scheduler,
    store,
    scaler: options.scaler,
    roundMs: roundDurations(timingOf(options), options.timingSeed ?? 1, options.speedSpanMs),
    controlPlane: options.controlPlane ?? 'serial',
    initialIps: options.scaler.batchSize ?? 16,
    onSample: (s) => {
      const t = scheduler.now() / 1000;
      const last = samples[samples.length - 1];
      if (last && last.t === t) samples.pop();
      samples.push({ t, ...s });
    },
  });
  const monitor = new PoolMonitor({
    store: asPoolIpStore(store),
    writer: node.writer,
    logger,
    scheduler,
    releaseDelayMs: options.releaseDelaySeconds * 1000,
    ...(options.policy ? { policy: options.policy } : {}),
    random: seededRandom(1),
  });
  const demand$ = new Subject<number>();
  const exhausted$ = new BehaviorSubject<boolean>(false);
  try {
    const follower = followNnc(store, { logger });
    const nnc$ = node.nnc$.pipe(tap((nnc) => follower.follow(nnc)));
    monitor.start({ demand$, exhausted$, nnc$ });
    node.publish();
    for (const point of trace.points) {
      scheduler.schedule(() => {
        if (point.exhausted !== undefined && point.exhausted !== exhausted$.value) {
          exhausted$.next(point.exhausted);
        }
        node.setDemand(point.demand);
        demand$.next(point.demand);
      }, point.t * 1000);
    }
    await scheduler.advanceTo(trace.durationSeconds * 1000, options.signal);
    const reconciles = monitor.snapshot().reconciles;
    const account = monitor.damping()?.account;
    await monitor.stop();
    const endSeconds = Math.min(trace.durationSeconds, scheduler.now() / 1000);
    return {
      summary: summarize(trace.name, samples, endSeconds, {
        nncWrites: node.writes,
        reconciles,
        podWaitsSeconds: node.pods.waitsSeconds,
        podIpRefusals: node.pods.refusals,
      }),
      samples,
      ...(account !== undefined ? { account } : {}),
      rounds: { count: node.rounds, ms: node.roundsMs },
      podWaitsSeconds: node.pods.waitsSeconds,
    };
  } finally {
    store.close();
  }
}
