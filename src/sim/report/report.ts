// The report an embedded run ends with: one plain object (written as JSON by
// `--report FILE`) and its text rendering for the terminal. Pure: the harness
// gathers the raw figures, these functions only shape them.
import { summarize, type Sample } from '../summary.ts';
import { renderChart, type ChartOptions } from './chart.ts';
import { waitStats, type WaitStats } from './stats.ts';

export interface ReportInput {
  scenario: string;
  nodes: number;
  /** Seconds the run lasted. */
  durationSeconds: number;
  /** Per pod, milliseconds from scheduling to IP. */
  podWaitsMs: readonly number[];
  /** NNC spec writes by the sidecars, summed over nodes. */
  nncWrites: number;
  /** Cluster-wide totals over time (seconds from the start); a step function. */
  samples: readonly Sample[];
  /** API server requests by verb (get, list, watch, create, patch, ...). */
  apiRequestsByVerb: Readonly<Record<string, number>>;
  /** IP churn from the fulfiller's own counters; derived from the samples when absent. */
  ipChurn?: { allocated: number; released: number };
  /**
   * Pod actions the workload performed; `endedWaiting`: pods it completed or
   * deleted before they ran, and the longest of their waits.
   */
  pods?: {
    created: number;
    completed: number;
    deleted: number;
    waitingAtEnd?: number;
    endedWaiting?: number;
    endedWaitingMaxMs?: number;
  };
  /** Invariant violations seen during the run. */
  invariantViolations?: number;
}

export interface Report {
  scenario: string;
  nodes: number;
  durationSeconds: number;
  podWait: WaitStats;
  nncWrites: number;
  ipChurn: { allocated: number; released: number };
  idleIpSeconds: number;
  peak: { demand: number; requested: number; allocated: number };
  apiRequests: { total: number; byVerb: Record<string, number> };
  pods?: ReportInput['pods'];
  invariantViolations?: number;
  timeline: Sample[];
}

/** Shapes the raw figures into the report object (JSON-ready, stable key order). */
export function buildReport(input: ReportInput): Report {
  const samples = [...input.samples].sort((a, b) => a.t - b.t);
  const summary = summarize(input.scenario, samples, input.durationSeconds, {
    nncWrites: input.nncWrites,
    reconciles: 0,
  });
  const byVerb: Record<string, number> = {};
  for (const verb of Object.keys(input.apiRequestsByVerb).sort()) {
    byVerb[verb] = input.apiRequestsByVerb[verb] ?? 0;
  }
  const report: Report = {
    scenario: input.scenario,
    nodes: input.nodes,
    durationSeconds: Math.round(input.durationSeconds * 10) / 10,
    podWait: waitStats(input.podWaitsMs),
    nncWrites: input.nncWrites,
    ipChurn: input.ipChurn ?? { allocated: summary.ipsAllocated, released: summary.ipsReleased },
    idleIpSeconds: summary.idleIpSeconds,
    peak: {
      demand: summary.peakDemand,
      requested: Math.max(0, ...samples.map((s) => s.requested)),
      allocated: summary.peakPool,
    },
    apiRequests: { total: Object.values(byVerb).reduce((a, b) => a + b, 0), byVerb },
    timeline: samples,
  };
  if (input.pods) report.pods = { ...input.pods };
  if (input.invariantViolations !== undefined) {
    report.invariantViolations = input.invariantViolations;
  }
  return report;
}

const ms = (v: number | null): string => (v === null ? 'n/a' : `${v} ms`);

/** The report as terminal lines: figures, then the chart. */
export function renderReport(report: Report, chart: ChartOptions = {}): string[] {
  const w = report.podWait;
  const lines = [
    `Report: scenario ${report.scenario}, ${report.nodes} node${report.nodes === 1 ? '' : 's'}, ${report.durationSeconds} s`,
    `  pod wait (scheduling to IP)  ${w.count} pods  p50 ${ms(w.p50Ms)}  p95 ${ms(w.p95Ms)}  p99 ${ms(w.p99Ms)}  max ${ms(w.maxMs)}`,
  ];
  if (report.pods) {
    const p = report.pods;
    const waiting = p.waitingAtEnd !== undefined ? `, ${p.waitingAtEnd} still waiting` : '';
    lines.push(
      `  pods                         ${p.created} created, ${p.completed} completed, ${p.deleted} deleted${waiting}`,
    );
  }
  lines.push(
    `  NNC writes                   ${report.nncWrites}`,
    `  IP churn                     ${report.ipChurn.allocated} allocated, ${report.ipChurn.released} released`,
    `  idle IP-seconds              ${report.idleIpSeconds}`,
    `  peak                         demand ${report.peak.demand}, requested ${report.peak.requested}, allocated ${report.peak.allocated}`,
  );
  const verbs = Object.entries(report.apiRequests.byVerb)
    .map(([verb, n]) => `${verb} ${n}`)
    .join(', ');
  lines.push(
    `  API requests                 ${report.apiRequests.total}${verbs ? ` (${verbs})` : ''}`,
  );
  if (report.invariantViolations !== undefined) {
    lines.push(
      `  invariant violations         ${report.invariantViolations}${report.invariantViolations === 0 ? ' (all held)' : ''}`,
    );
  }
  lines.push(
    '',
    '  IPs over time, all nodes',
    ...renderChart(report.timeline, chart).map((l) => `  ${l}`),
  );
  return lines;
}

/** Sums request counters (the API server's `counters().entries()`) by verb. */
export function requestsByVerb(
  entries: readonly { verb: string; count: number }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of entries) out[e.verb] = (out[e.verb] ?? 0) + e.count;
  return out;
}
