// Tuning advice on /debug/pool from the node's own recorded demand history:
// the last day of the pool history through the fast pool model, for every
// candidate batch size and release policy (src/scaling/advise). Worked out in
// the background, one candidate per turn of the event loop so the node API
// stays responsive, at most every ten minutes, and only when asked for.
import type { PoolHistory } from '../ipstore/pool-history.ts';
import type { Logger } from '../log/logger.ts';
import type { Advice } from '../scaling/advise/advise.ts';
import { buildAdvice, candidates, type Candidate, type Figures } from '../scaling/advise/advise.ts';
import { evaluateCandidate, type HistoryAdviceInput } from '../scaling/advise/history.ts';
import type { Scaler } from '../scaling/scaler.ts';

export interface AdviceView {
  status: 'ready' | 'working' | 'not enough history';
  computedAt?: string;
  historySeconds?: number;
  /** What the model assumes that the node cannot know. */
  assumes: string;
  summary?: string;
  best?: Advice['best'];
  current?: Advice['current'];
  budget?: Advice['budget'];
  /** The five best candidates. */
  top?: Advice['candidates'];
}

export interface AdvisorOptions {
  history: PoolHistory;
  /** The node's scaler (from its NNC) now; undefined before the first NNC. */
  scaler: () => Scaler | undefined;
  log: Logger;
  now?: () => number;
  windowMs?: number;
  refreshMs?: number;
  /** Below this much history there is nothing to advise on. */
  minimumMs?: number;
  idleRatio?: number;
  fulfilDelayMs?: number;
}

export interface Advisor {
  /** The latest advice; starts working out a fresh one when it is old. */
  current(): AdviceView;
  stop(): void;
}

export function createAdvisor(o: AdvisorOptions): Advisor {
  const now = o.now ?? Date.now;
  const refreshMs = o.refreshMs ?? 600_000;
  const windowMs = o.windowMs ?? 24 * 3600_000;
  const minimumMs = o.minimumMs ?? 600_000;
  const fulfilDelayMs = o.fulfilDelayMs ?? 2000;
  const assumes = `the control plane fulfils a write in ${fulfilDelayMs / 1000} s; idle budget ${o.idleRatio ?? 1.25}x CNS v2`;
  let view: AdviceView | undefined;
  let at = Number.NEGATIVE_INFINITY;
  let working = false;
  let stopped = false;
  let pending: NodeJS.Immediate | undefined;

  const start = (): void => {
    const scaler = o.scaler();
    if (scaler === undefined) return;
    const t = now();
    let rows;
    try {
      rows = o.history.load(t - windowMs);
    } catch (err) {
      o.log.warn('advice: pool history not read', { error: String(err) });
      return;
    }
    at = t;
    const first = rows[0];
    if (first === undefined || t - first.at < minimumMs) {
      view = {
        status: 'not enough history',
        assumes,
        historySeconds: first ? Math.round((t - first.at) / 1000) : 0,
      };
      return;
    }
    const input: HistoryAdviceInput = {
      source: 'node history',
      points: rows.map((r) => ({ at: r.at, demand: r.demand })),
      durationMs: t - first.at,
      scaler,
      fulfilDelayMs,
      idleRatio: o.idleRatio ?? 1.25,
    };
    const todo: Candidate[] = candidates(scaler.batch, scaler.max);
    const done: (Candidate & Figures)[] = [];
    working = true;
    const step = (): void => {
      pending = undefined;
      if (stopped) return;
      const c = todo.shift();
      if (c !== undefined) {
        done.push(evaluateCandidate(input, c));
        pending = setImmediate(step);
        return;
      }
      working = false;
      const a = buildAdvice(
        input.source,
        input.durationMs / 1000,
        scaler.batch,
        done,
        input.idleRatio,
      );
      view = {
        status: 'ready',
        computedAt: new Date(t).toISOString(),
        historySeconds: Math.round(input.durationMs / 1000),
        assumes,
        summary: a.summary,
        best: a.best,
        current: a.current,
        budget: a.budget,
        top: a.candidates.slice(0, 5),
      };
    };
    pending = setImmediate(step);
  };

  return {
    current: () => {
      if (!working && !stopped && now() - at >= refreshMs) start();
      return view ?? { status: 'working', assumes };
    },
    stop: () => {
      stopped = true;
      if (pending !== undefined) clearImmediate(pending);
    },
  };
}
