// The pool monitor as the sidecar builds it (sidecar.ts): its NNC writer,
// which reads the NNC as the intake took it (nnc-intake.ts), what it learned
// before a restart (the pool history and auto's idle account, through the
// store), and auto's advice. Its stop step ends the history's recording.
import type { KubeConfig } from '@kubernetes/client-node';
import { systemClock, type Clock } from '../clock/clock.ts';
import { asPoolIpStore } from '../ipstore/pool-adapter.ts';
import type { PoolHistory } from '../ipstore/pool-history.ts';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { errorText } from '../log/error-text.ts';
import type { Logger } from '../log/logger.ts';
import { PoolMonitor } from '../monitor/pool-monitor.ts';
import { parseCarried, type CarriedAccount } from '../scaling/policies/budget/carried.ts';
import type { Observation } from '../scaling/policies/policy.ts';
import { releasePolicy } from '../scaling/policies/release-delay.ts';
import { createAdvisor, type Advisor } from './advice.ts';
import { recordPoolHistory } from './history-recorder.ts';
import type { NncSeen } from './nnc-intake.ts';
import { createNncWriter } from './nnc-writer.ts';
import type { SidecarOptions } from './options.ts';
import type { StopSteps } from './stop-steps.ts';

/** How far back the pool history is read at start (the policy's memory is bounded anyway). */
const HISTORY_LOAD_MS = 24 * 3600_000;

export interface MonitorTuning {
  /** The wall clock the pool history is read back by (default the system's). */
  clock?: Pick<Clock, 'now'>;
  defaultMetrics?: boolean;
  events?: boolean;
  tickMs?: number;
  writeWindowMs?: number;
  writeBackoff?: Partial<BackoffOptions>;
  random?: () => number;
}

/** The pool monitor with what it learned before a restart. */
export interface PoolPart {
  monitor: PoolMonitor;
  /** `auto`'s advice from the pool history (none without one). */
  advisor: Advisor | undefined;
  /** Observations loaded from the pool history at start. */
  learned: number;
}

export function buildMonitor(
  input: {
    options: SidecarOptions;
    tuning: MonitorTuning;
    root: Logger;
    log: Logger;
    kc: KubeConfig;
    store: NodeIpStore;
    /** The NNC as the intake took it: what the writer reads. */
    nnc: NncSeen;
  },
  stops: StopSteps,
): PoolPart {
  const { options, tuning, root, log, kc, store, nnc } = input;
  const history = store.poolHistory();
  const learned = loadHistory(history, (tuning.clock ?? systemClock).now(), log);
  const carried = loadAccount(history, log);
  const monitor = new PoolMonitor({
    store: asPoolIpStore(store),
    writer: createNncWriter({
      kc,
      name: options.nodeName,
      namespace: options.namespace,
      observedIds: () => nnc.current()?.spec?.ipsNotInUse,
      // Not while it is being deleted or gone after it was seen (the same
      // gate as the node API's, waiting.ts): its successor gets the spec.
      present: () => nnc.goneReason() === undefined,
    }),
    logger: root,
    ...(tuning.tickMs !== undefined ? { tickMs: tuning.tickMs } : {}),
    ...(tuning.writeWindowMs !== undefined ? { writeWindowMs: tuning.writeWindowMs } : {}),
    ...(tuning.writeBackoff ? { backoff: tuning.writeBackoff } : {}),
    ...(tuning.random ? { random: tuning.random } : {}),
    policy: releasePolicy(options.releaseDelay, options.idleBudget, carried),
    history: learned,
    dryRun: options.dryRun,
  });
  const advisor = history
    ? createAdvisor({ history, scaler: () => monitor.snapshot().scaler, log })
    : undefined;
  const historyRecorder = history
    ? recordPoolHistory({
        history,
        observations$: monitor.observations$,
        log,
        // auto's idle account survives a restart (docs/decisions/0034).
        account: { record: history.account(), carry: () => monitor.damping()?.account?.carry },
      })
    : undefined;
  stops.push('pool history', () => {
    historyRecorder?.stop();
    advisor?.stop();
  });
  return { monitor, advisor, learned: learned.length };
}

/** What auto learned before a restart: the pool history in the node store. */
function loadHistory(history: PoolHistory | undefined, now: number, log: Logger): Observation[] {
  try {
    return history?.load(now - HISTORY_LOAD_MS) ?? [];
  } catch (err) {
    log.warn('pool history not loaded', { error: errorText(err) });
    return [];
  }
}

/** auto's idle account as saved before a restart; none when absent or unreadable. */
function loadAccount(history: PoolHistory | undefined, log: Logger): CarriedAccount | undefined {
  try {
    const saved = history?.account().load();
    if (saved === undefined) return undefined;
    const carried = parseCarried(saved.state);
    if (carried === undefined) log.warn('idle account in the store not readable: starting at zero');
    else log.info('idle account resumed', { savedAt: new Date(carried.savedAt).toISOString() });
    return carried;
  } catch (err) {
    log.warn('idle account not loaded', { error: errorText(err) });
    return undefined;
  }
}
