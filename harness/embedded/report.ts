// What an embedded run reports: the shared report plus what the embedded
// cluster adds (exhaustion, scaling, leaks, access, Azure, chaos), its
// human lines, and the reasons the run fails (persistent invariant
// violations, the API server refusing what the product needs, and under
// chaos a crash, an unclean stop or a pod left without an IP).
import type { CounterEntry } from '../apiserver/counters.ts';
import type { Violation } from '../../src/sim/invariants.ts';
import { renderReport, type Report } from '../../src/sim/report/report.ts';
import { refusals, type Component, type ProductAccessReport } from './access.ts';
import { azureReportLines, type AzureReport } from './azure-report.ts';
import { chaosLines, chaosProblems, type ChaosSummary } from './chaos/chaos.ts';
import { leakLines, type LeakReport } from './leaks.ts';
import type { ExhaustionSummary } from './sampler.ts';
import type { NetnsReport } from './node-networks.ts';
import { familyLine, familyProblems, type FamilyReport } from './family-tally.ts';

/** The JSON report: the shared report plus what the embedded run adds. */
export interface EmbeddedReport extends Report {
  /** The first pod subnet (IPv4 unless IPv6-only); every one is in `families`. */
  podSubnet: string;
  /** The address families: subnets, pods served by family, NNC addresses by family. */
  families: FamilyReport;
  exhaustion: ExhaustionSummary;
  scaling: { up: boolean; down: boolean };
  violations: Violation[];
  stoppedEarly: boolean;
  /** With leaks: dropped DELs, reclaims, adoptions and lost stores. */
  leaks?: LeakReport;
  /**
   * What the API server (RBAC, admission) allowed and refused each component,
   * running with exactly what manifests/ grants it, and the requests refused
   * as unauthenticated. Any refusal fails the run.
   */
  access: ProductAccessReport;
  /** With --backend azure: ARM requests by operation and status, NIC PUTs per node. */
  azure?: AzureReport;
  /** What the chaos harness did (with --chaos). */
  chaos?: ChaosSummary;
  /** Watch requests the API server got during the scenario (docs/decisions/0031). */
  watchRequests: WatchRequests;
  /** The schedule signal (in-process sidecars only). */
  scheduleSignal?: ScheduleSignalSummary;
  /** With --netns: pods configured by the real plugin chain, pinged, failed; namespaces left. */
  netns?: NetnsReport;
}

/** Watch requests during the scenario (after set-up), from the API server's request counters. */
export interface WatchRequests {
  total: number;
  /** By resource (`pods`, `nodenetworkconfigs`, ...). */
  byResource: Record<string, number>;
  perNodePerMinute: number;
}

/** Watch requests so far by resource, from the API server's counters (any code). */
export function watchRequestCounts(entries: readonly CounterEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of entries)
    if (e.verb === 'watch') out[e.resource] = (out[e.resource] ?? 0) + e.count;
  return out;
}

/** The watch requests between two counts, per node per minute of `seconds`. */
export function watchRequests(
  before: Record<string, number>,
  after: Record<string, number>,
  nodes: number,
  seconds: number,
): WatchRequests {
  const byResource: Record<string, number> = {};
  let total = 0;
  for (const [resource, n] of Object.entries(after)) {
    const d = n - (before[resource] ?? 0);
    if (d <= 0) continue;
    byResource[resource] = d;
    total += d;
  }
  const minutes = seconds / 60;
  const perNodePerMinute = nodes > 0 && minutes > 0 ? total / nodes / minutes : 0;
  return { total, byResource, perNodePerMinute: Math.round(perNodePerMinute * 1000) / 1000 };
}

/** The watch requests line of the report. */
export function watchRequestsLine(w: WatchRequests): string {
  const parts = Object.entries(w.byResource)
    .sort((a, b) => b[1] - a[1])
    .map(([resource, n]) => `${resource} ${n}`);
  const during = `${w.total} during the scenario${parts.length ? `: ${parts.join(', ')}` : ''}`;
  return `  watch requests               ${w.perNodePerMinute} per node per minute (${during})`;
}

/** One line per node, `node-0  http://127.0.0.1:PORT`, in node order. */
export function nodeApiLines(
  nodes: readonly { name: string; sidecar: { url: string } }[],
): string[] {
  return nodes.map((n) => `${n.name}  ${n.sidecar.url}`);
}

/** The access line of the report. */
export function accessLine(a: EmbeddedReport['access']): string {
  const part = (c: Component, label: string): string =>
    `${label} ${a[c].allowed} allowed, ${a[c].refused.length + a[c].denied.length} refused`;
  const none = refusals(a).length === 0 ? '' : ' (see above)';
  return `  access (manifests' RBAC)     ${part('sidecar', 'sidecars')}; ${part('fulfiller', 'fulfiller')}${none}`;
}

/** The exhaustion line of the report. */
export function exhaustionLine(e: ExhaustionSummary): string {
  if (!e.happened) return '  subnet exhaustion            no (the pod subnet never ran low)';
  const recovered =
    e.recoveredAtSeconds === null
      ? 'still exhausted at the end'
      : `recovered at ${e.recoveredAtSeconds} s`;
  return `  subnet exhaustion            yes, CSS exhausted at ${e.firstAtSeconds} s, ${recovered}`;
}

export function renderEmbeddedReport(r: EmbeddedReport): string[] {
  const lines = renderReport(r);
  const scaling = `  scaling                      ${r.scaling.up ? 'scaled up' : 'no scale-up'}, ${r.scaling.down ? 'scaled down' : 'no scale-down'}  (pod subnet ${r.podSubnet})`;
  // After the figures, before the chart (the blank line).
  const at = lines.indexOf('');
  lines.splice(
    at < 0 ? lines.length : at,
    0,
    exhaustionLine(r.exhaustion),
    scaling,
    familyLine(r.families),
    ...(r.leaks ? leakLines(r.leaks) : []),
    accessLine(productAccess(r)),
    watchRequestsLine(r.watchRequests),
    ...(r.scheduleSignal ? [scheduleSignalLine(r.scheduleSignal)] : []),
    ...(r.azure ? azureReportLines(r.azure) : []),
    ...(r.netns ? netnsLines(r.netns) : []),
    ...(r.chaos
      ? chaosLines(r.chaos, r.nodes, {
          served: r.podWait.count,
          created: r.pods?.created ?? 0,
          endedWaiting: r.pods?.endedWaiting ?? 0,
        })
      : []),
  );
  if (r.stoppedEarly) lines[0] = `${lines[0]} (stopped early by a signal)`;
  return lines;
}

/**
 * The access the product is judged on: under chaos, the 401s of a deleted
 * Node's sidecar (its token is bound to the Node, chaos/node-deletions.ts)
 * are the harness's, not the product's.
 */
export function productAccess(r: EmbeddedReport): EmbeddedReport['access'] {
  const expected = Math.min(
    r.access.unauthenticated,
    r.chaos?.unauthenticatedWhileNodesDeleted ?? 0,
  );
  return { ...r.access, unauthenticated: r.access.unauthenticated - expected };
}

/** Why the run failed, as stderr lines (none: it passed). */
export function failureLines(r: EmbeddedReport): string[] {
  const out: string[] = [];
  if (r.violations.length > 0) {
    out.push(`FAILED: ${r.violations.length} persistent invariant violation(s):`);
    for (const v of r.violations.slice(0, 20)) out.push(`  ${v.kind}: ${v.message}`);
  }
  const refused = refusals(productAccess(r));
  if (refused.length > 0) {
    out.push(`FAILED: the API server refused what the product needs (manifests/):`);
    for (const line of refused.slice(0, 20)) out.push(`  ${line}`);
  }
  // Under chaos the product must also not crash, stop cleanly, and serve every pod.
  const problems = r.chaos ? chaosProblems(r.chaos) : [];
  if (r.chaos && !r.stoppedEarly && (r.pods?.waitingAtEnd ?? 0) > 0)
    problems.push(`${r.pods?.waitingAtEnd} pod(s) still waiting for an IP at the end`);
  for (const p of problems) out.push(`FAILED: ${p}`);
  if (r.netns) for (const p of netnsProblems(r.netns)) out.push(`FAILED: ${p}`);
  for (const p of familyProblems(r.families)) out.push(`FAILED: ${p}`);
  return out;
}

/** The --netns lines of the report. */
export function netnsLines(n: NetnsReport): string[] {
  const across = n.nodes > 1 ? `, ${n.pingedAcross} from another node` : '';
  const families = (['IPv4', 'IPv6'] as const)
    .filter((f) => n.pingedByFamily[f] !== undefined)
    .map((f) => {
      const p = n.pingedByFamily[f]!;
      return `${f} ${p.onNode}${n.nodes > 1 ? ` + ${p.across}` : ''}`;
    });
  const dad =
    n.pingedByFamily.IPv6 !== undefined || n.dadFailed > 0
      ? `; IPv6 duplicate address detection: ${n.dadFailed} duplicates, waited ${n.dadWaitMaxMs} ms at most`
      : '';
  return [
    `  pod networks (--netns)       ${n.configured} pods configured by ${n.chain}, ${n.addFailed} ADDs failed (${n.mismatched} address mismatches); ${n.deleted} DELs, ${n.delFailed} failed${dad}`,
    `  pings                        ${n.pingedOnNode} pods answered from their node${across}; ${n.pingFailed} failed` +
      `${families.length ? ` (addresses answering: ${families.join(', ')})` : ''}  (routing: ${n.routing})`,
    `  namespaces left behind       ${n.leftBehind.length === 0 ? 'none' : n.leftBehind.join(', ')}`,
  ];
}

/** Why a --netns run failed: a ping unanswered, an address that was not the chain's, a namespace left. */
export function netnsProblems(n: NetnsReport): string[] {
  const out: string[] = [];
  if (n.pingFailed > 0) out.push(`${n.pingFailed} ping(s) to configured pods unanswered`);
  if (n.mismatched > 0)
    out.push(`${n.mismatched} pod(s) with an address other than the chain's result`);
  if (n.dadFailed > 0)
    out.push(
      `${n.dadFailed} IPv6 address(es) found on the segment twice (duplicate address detection)`,
    );
  if (n.leftBehind.length > 0) out.push(`namespaces left behind: ${n.leftBehind.join(', ')}`);
  return out;
}

/** One node's schedule-signal history (its in-process sidecar's), for the report. */
export interface NodeSignalHistory {
  name: string;
  marks: readonly { at: number; canServe: boolean; waiting: boolean }[];
}

/** The schedule signal in the report (issue 43, docs/decisions/0035). */
export interface ScheduleSignalSummary {
  on: boolean;
  /** Signal changes over all nodes (taint set or removed). */
  changes: number;
  /**
   * Seconds, summed over nodes, during which pods waited for an address on a
   * node that could not serve them while another node could.
   */
  strandedSeconds: number;
  /** The nodes where that happened. */
  strandedNodes: string[];
}

/**
 * Seconds during which pods waited on a node that could not serve while
 * another node could, from the sidecars' histories between from and to.
 */
export function strandedSeconds(
  nodes: readonly NodeSignalHistory[],
  from: number,
  to: number,
): { seconds: number; nodes: string[] } {
  const times = [...new Set([from, to, ...nodes.flatMap((n) => n.marks.map((m) => m.at))])]
    .filter((t) => t >= from && t <= to)
    .sort((a, b) => a - b);
  const at = (n: NodeSignalHistory, t: number) => {
    let last: { canServe: boolean; waiting: boolean } | undefined;
    for (const m of n.marks) if (m.at <= t) last = m;
    return last ?? { canServe: false, waiting: false };
  };
  let ms = 0;
  const where = new Set<string>();
  for (let i = 0; i + 1 < times.length; i += 1) {
    const t = times[i] as number;
    const states = nodes.map((n) => ({ name: n.name, ...at(n, t) }));
    for (const s of states) {
      if (!s.waiting || s.canServe) continue;
      if (!states.some((o) => o.name !== s.name && o.canServe)) continue;
      ms += (times[i + 1] as number) - t;
      where.add(s.name);
    }
  }
  return { seconds: Math.round(ms / 100) / 10, nodes: [...where].sort() };
}

/** The schedule signal line of the report. */
export function scheduleSignalLine(s: ScheduleSignalSummary): string {
  const where = s.strandedNodes.length ? ` (${s.strandedNodes.join(', ')})` : '';
  return (
    `  schedule signal              ${s.on ? 'on' : 'off'}, ${s.changes} taint change(s); ` +
    `pods waited ${s.strandedSeconds} s on a node that could not serve them while another could${where}`
  );
}
