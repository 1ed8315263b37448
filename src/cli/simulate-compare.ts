// `simulate --compare`, `--report FILE.html` and `--advise`: the trace through
// several policies (or batch sizes) side by side, printed as a table or JSON,
// written as one self-contained HTML page.
import { writeFileSync } from 'node:fs';
import type { ScalerSpec } from '../nnc/types.ts';
import { adviseOnTrace, formatAdvice } from '../sim/advise.ts';
import { comparisonTable, formatComparison, runComparison } from '../sim/compare.ts';
import type { FulfilTimingName } from '../sim/fulfil-timing.ts';
import { renderComparisonHtml } from '../sim/report/html.ts';
import type { Trace } from '../sim/trace.ts';
import type { ReleaseDelay } from '../scaling/release-delay-value.ts';

export interface CompareCommandOptions {
  trace: Trace;
  batch: number;
  threshold: number;
  max: number;
  releaseDelay: ReleaseDelay;
  fulfilDelay: number;
  /** The control plane at a backend's speed (overrides fulfilDelay). */
  fulfilTiming?: FulfilTimingName;
  json?: boolean;
  compare?: boolean;
  policies?: string[];
  report?: string;
  advise?: boolean;
  idleBudget: number;
}

/** The policy names `--report` runs without `--compare`: CNS v2 and the chosen one. */
function chosenPolicies(delay: ReleaseDelay): string[] {
  if (delay.kind === 'auto') return ['cns-v2', 'auto'];
  return delay.seconds === 0 ? ['cns-v2'] : ['cns-v2', `delay-${delay.seconds}s`];
}

export async function runCompareCommand(o: CompareCommandOptions): Promise<void> {
  const scaler: ScalerSpec = {
    batchSize: o.batch,
    requestThresholdPercent: o.threshold,
    releaseThresholdPercent: 150,
    maxIPCount: o.max,
  };
  // SIGINT/SIGTERM end the runs early; what ran is reported, exit 0.
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    if (o.advise && o.fulfilTiming !== undefined) {
      // The advice's pool model (src/scaling/advise) takes one fixed delay.
      throw new Error(
        '--advise models a fixed fulfil delay: use --fulfil-delay SECONDS, not --fulfil-timing',
      );
    }
    if (o.advise) {
      const advice = await adviseOnTrace({
        trace: o.trace,
        scaler,
        fulfilDelaySeconds: o.fulfilDelay,
        idleBudget: o.idleBudget,
        signal: abort.signal,
      });
      process.stdout.write(o.json ? `${JSON.stringify(advice)}\n` : `${formatAdvice(advice)}\n`);
      if (!o.compare && o.report === undefined) return;
    }
    const comparison = await runComparison({
      trace: o.trace,
      scaler,
      fulfilDelaySeconds: o.fulfilDelay,
      ...(o.fulfilTiming !== undefined ? { fulfilTiming: o.fulfilTiming } : {}),
      idleBudget: o.idleBudget,
      ...(o.policies !== undefined
        ? { only: o.policies }
        : o.compare
          ? {}
          : { only: chosenPolicies(o.releaseDelay) }),
      signal: abort.signal,
    });
    if (o.report !== undefined) {
      writeFileSync(o.report, renderComparisonHtml(comparison, new Date()));
    }
    if (o.json) {
      process.stdout.write(
        `${JSON.stringify({
          trace: comparison.trace,
          scaler,
          fulfilDelaySeconds: o.fulfilDelay,
          ...(o.fulfilTiming !== undefined ? { fulfilTiming: o.fulfilTiming } : {}),
          rows: comparison.rows.map((r) => ({
            policy: r.policy,
            ...r.summary,
            ...(r.account !== undefined ? { account: r.account } : {}),
          })),
          table: comparisonTable(comparison),
          ...(o.report !== undefined ? { report: o.report } : {}),
        })}\n`,
      );
    } else {
      process.stdout.write(`${formatComparison(comparison)}\n`);
      if (o.report !== undefined) process.stdout.write(`report written to ${o.report}\n`);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
