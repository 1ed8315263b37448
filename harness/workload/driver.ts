// Executes a plan against the API: waits (on the injected clock) until each
// action is due, then creates, completes or deletes the pod, with bounded
// concurrency. Actions on one pod stay in order (its create finishes before
// its completion starts). Failed calls are retried with backoff; a pod that
// already exists (409) or is already gone (404) counts as done (as done by
// this action when an earlier attempt failed: its answer was lost). stop() ends
// the run early and resolves once in-flight calls have finished.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../src/log/logger.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { backoffDelay, type BackoffOptions } from '../../src/kube/backoff.ts';
import { apiErrorInfo } from '../../src/kube/errors.ts';
import { systemClock, type Clock } from '../../src/clock/clock.ts';
import { isPermanentStatus, Slots } from '../../src/sim/slots.ts';
import type { Plan, PlannedAction } from './plan.ts';
import { workloadPod } from './pod.ts';

/** The three pod calls the driver makes; `kubePodApi` implements them with client-node. */
export interface PodApi {
  createPod(pod: V1Pod): Promise<void>;
  /** Sets `status.phase` (Succeeded: the pod finished, like a Job's). */
  setPodPhase(namespace: string, name: string, phase: 'Succeeded' | 'Failed'): Promise<void>;
  deletePod(namespace: string, name: string): Promise<void>;
}

export type ActionOutcome = 'done' | 'already' | 'failed' | 'stopped';

export interface DriverCounters {
  created: number;
  completed: number;
  deleted: number;
  /** 409 on create or 404 on complete/delete: nothing to do. */
  already: number;
  failed: number;
  retries: number;
}

export interface WorkloadDriverOptions {
  api: PodApi;
  plan: Plan;
  namespace?: string;
  /** Time and waits (tests run on a virtual clock). */
  clock?: Pick<Clock, 'now' | 'sleep'>;
  /** Calls in flight at most; default 16. */
  concurrency?: number;
  backoff?: BackoffOptions;
  /** Attempts per action before it counts as failed; default 6. */
  maxAttempts?: number;
  random?: () => number;
  logger?: Logger;
  /** Told after every action, e.g. to drive a progress bar. Must not throw. */
  onAction?: (action: PlannedAction, outcome: ActionOutcome) => void;
}

export const DEFAULT_DRIVER_BACKOFF: BackoffOptions = { initialMs: 200, maxMs: 5000 };

export class WorkloadDriver {
  readonly counters: DriverCounters = {
    created: 0,
    completed: 0,
    deleted: 0,
    already: 0,
    failed: 0,
    retries: 0,
  };
  private readonly o: Required<Omit<WorkloadDriverOptions, 'onAction'>> &
    Pick<WorkloadDriverOptions, 'onAction'>;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private startedAt: number | undefined;

  constructor(options: WorkloadDriverOptions) {
    this.o = {
      namespace: 'default',
      clock: systemClock,
      concurrency: 16,
      backoff: DEFAULT_DRIVER_BACKOFF,
      maxAttempts: 6,
      random: Math.random,
      logger: silentLogger(),
      ...options,
    };
  }

  /** Milliseconds since run() started, on the driver's clock. */
  elapsedMs(): number {
    return this.startedAt === undefined ? 0 : this.o.clock.now() - this.startedAt;
  }

  /** Runs the whole plan; resolves when every action is done or stop() was called. */
  run(): Promise<void> {
    this.running ??= this.execute();
    return this.running;
  }

  /** Stops dispatching and retrying; resolves once in-flight calls are over. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private async execute(): Promise<void> {
    const { clock, plan } = this.o;
    const slots = new Slots(this.o.concurrency);
    const chains = new Map<string, Promise<void>>();
    const inflight = new Set<Promise<void>>();
    const signal = this.abort.signal;
    this.startedAt = clock.now();
    this.o.logger.info('workload started', {
      scenario: plan.scenario,
      actions: plan.actions.length,
      durationMs: plan.durationMs,
    });
    for (const action of plan.actions) {
      const wait = this.startedAt + action.atMs - clock.now();
      if (wait > 0) await clock.sleep(wait, signal);
      if (signal.aborted) break;
      await slots.acquire();
      if (signal.aborted) {
        slots.release();
        break;
      }
      const previous = chains.get(action.pod) ?? Promise.resolve();
      const task: Promise<void> = previous
        .then(() => this.perform(action, signal))
        .then((outcome) => this.o.onAction?.(action, outcome))
        .finally(() => {
          slots.release();
          inflight.delete(task);
          if (chains.get(action.pod) === task) chains.delete(action.pod);
        });
      chains.set(action.pod, task);
      inflight.add(task);
    }
    await Promise.all(inflight);
    this.o.logger.info('workload finished', {
      scenario: plan.scenario,
      ...this.counters,
      stopped: signal.aborted,
    });
  }

  private call(action: PlannedAction): Promise<void> {
    const { api, namespace, clock, plan } = this.o;
    switch (action.kind) {
      case 'create':
        return api.createPod(
          workloadPod({
            name: action.pod,
            namespace,
            ...(action.unbound ? {} : { node: action.node }),
            group: action.group,
            scenario: plan.scenario,
            scheduledAtMs: clock.now(),
          }),
        );
      case 'complete':
        return api.setPodPhase(namespace, action.pod, 'Succeeded');
      case 'delete':
        return api.deletePod(namespace, action.pod);
    }
  }

  private count(action: PlannedAction): void {
    if (action.kind === 'create') this.counters.created += 1;
    else if (action.kind === 'complete') this.counters.completed += 1;
    else this.counters.deleted += 1;
  }

  private async perform(action: PlannedAction, signal: AbortSignal): Promise<ActionOutcome> {
    for (let attempt = 0; ; attempt += 1) {
      if (signal.aborted) return 'stopped';
      try {
        await this.call(action);
        this.count(action);
        return 'done';
      } catch (err) {
        const { statusCode: status, message } = apiErrorInfo(err);
        if (
          (action.kind === 'create' && status === 409) ||
          (action.kind !== 'create' && status === 404)
        ) {
          // After a failed attempt this is that attempt having landed (its
          // answer was lost): the action is done, not found done already.
          if (attempt > 0) {
            this.count(action);
            return 'done';
          }
          this.counters.already += 1;
          return 'already';
        }
        const last = attempt + 1 >= this.o.maxAttempts || isPermanentStatus(status);
        this.o.logger[last ? 'error' : 'warn'](last ? 'pod action failed' : 'pod action retry', {
          action: action.kind,
          pod: action.pod,
          node: action.node,
          attempt: attempt + 1,
          error: message,
        });
        if (last) {
          this.counters.failed += 1;
          return 'failed';
        }
        this.counters.retries += 1;
        await this.o.clock.sleep(backoffDelay(attempt, this.o.backoff, this.o.random), signal);
      }
    }
  }
}
