// `simulate --report FILE.html`: the comparison as one self-contained page -
// the table, then demand, requested and allocated IPs over time for each
// policy as inline SVG. No script, no font, no request to anywhere: it opens
// the same from a laptop, a CI artifact or an air-gapped cluster.
import {
  comparisonHeaders,
  comparisonTable,
  tableCells,
  type Comparison,
  type ComparisonRow,
  controlPlaneSentence,
} from '../compare.ts';
import type { Sample } from '../summary.ts';
import { formatSeconds } from './chart.ts';

export type SeriesName = 'demand' | 'requested' | 'allocated';
export const SERIES: readonly SeriesName[] = ['demand', 'requested', 'allocated'];
const COLOURS: Record<SeriesName, string> = {
  demand: '#7f7f7f',
  requested: '#d95f02',
  allocated: '#1b9e77',
};

const WIDTH = 560;
const HEIGHT = 180;
const PAD = { left: 44, right: 8, top: 8, bottom: 24 };

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/**
 * An SVG path of a step function, at most a few points per pixel column:
 * within a column it keeps the first, lowest, highest and last value, so a
 * day of changes draws in ~2,000 points and no peak or dip is lost.
 */
export function stepPath(
  samples: readonly Sample[],
  series: SeriesName,
  x: (t: number) => number,
  y: (v: number) => number,
  endT: number,
): string {
  if (samples.length === 0) return '';
  const parts: string[] = [];
  let column = Number.NaN;
  let bucket: number[] = [];
  let prevY: number | undefined;
  const flush = (): void => {
    if (bucket.length === 0) return;
    const first = bucket[0] as number;
    const last = bucket[bucket.length - 1] as number;
    const lo = Math.min(...bucket);
    const hi = Math.max(...bucket);
    const ys = bucket.length === 1 ? [first] : [first, lo, hi, last];
    for (const v of ys) {
      const py = y(v);
      if (parts.length === 0) parts.push(`M${column.toFixed(1)},${py.toFixed(1)}`);
      else {
        if (prevY !== undefined && py !== prevY) parts.push(`H${column.toFixed(1)}`);
        parts.push(`V${py.toFixed(1)}`);
      }
      prevY = py;
    }
    bucket = [];
  };
  for (const s of samples) {
    const px = Math.round(x(s.t));
    if (px !== column) {
      flush();
      column = px;
    }
    bucket.push(s[series]);
  }
  flush();
  parts.push(`H${x(endT).toFixed(1)}`);
  return parts.join('');
}

function ticks(max: number): number[] {
  const step = max <= 10 ? 2 : max <= 50 ? 10 : max <= 100 ? 20 : max <= 250 ? 50 : 100;
  const out: number[] = [];
  for (let v = 0; v <= max; v += step) out.push(v);
  return out;
}

/** The samples in force during [from, to], the first one moved to `from`. */
export function window(samples: readonly Sample[], from: number, to: number): Sample[] {
  let before: Sample | undefined;
  const inside: Sample[] = [];
  for (const s of samples) {
    if (s.t <= from) before = s;
    else if (s.t <= to) inside.push(s);
  }
  return before ? [{ ...before, t: from }, ...inside] : inside;
}

/** One policy's chart: demand, requested and allocated IPs from `fromT` to `endT`. */
export function policyChart(
  row: ComparisonRow,
  endT: number,
  yMax: number,
  fromT = 0,
  kind: 'run' | 'zoom' = 'run',
): string {
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const span = endT - fromT;
  const samples = fromT > 0 ? window(row.samples, fromT, endT) : row.samples;
  const x = (t: number): number => PAD.left + (span > 0 ? ((t - fromT) / span) * plotW : 0);
  const y = (v: number): number => PAD.top + plotH - (v / yMax) * plotH;
  const grid = ticks(yMax)
    .map(
      (v) =>
        `<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>` +
        `<text x="${PAD.left - 4}" y="${(y(v) + 3).toFixed(1)}" class="ylabel">${v}</text>`,
    )
    .join('');
  const xlabels = [0, 0.5, 1]
    .map((f) => {
      const anchor = f === 0 ? 'start' : f === 1 ? 'end' : 'middle';
      const t = fromT + span * f;
      return `<text x="${x(t).toFixed(1)}" y="${HEIGHT - 6}" text-anchor="${anchor}" class="xlabel">${formatSeconds(t)}</text>`;
    })
    .join('');
  const paths = SERIES.map(
    (s) =>
      `<path data-series="${s}" d="${stepPath(samples, s, x, y, endT)}" stroke="${COLOURS[s]}" class="series ${s}"/>`,
  ).join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" data-chart="${kind}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" ` +
    `role="img" aria-label="${escapeHtml(row.policy)}: demand, requested and allocated IPs over time">` +
    `${grid}${xlabels}${paths}</svg>`
  );
}

const STYLE = `
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 0 0 2px; }
p.meta { color: #555; margin: 0 0 16px; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
tr.base td { background: #f4f4f4; } tr.auto td { font-weight: 600; }
.grid-of-charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(${WIDTH}px, 1fr)); gap: 16px; }
figure { margin: 0; } figcaption { color: #555; font-size: 12px; margin-bottom: 4px; }
svg .grid { stroke: #eee; } svg .ylabel { font-size: 10px; text-anchor: end; fill: #777; }
svg .xlabel { font-size: 10px; fill: #777; } svg .series { fill: none; stroke-width: 1.4; }
svg .requested { stroke-dasharray: 4 2; } svg .demand { stroke-width: 1; }
.legend span { display: inline-block; margin-right: 14px; } .legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle; margin-right: 4px; }
`;

/** The whole page. */
export function renderComparisonHtml(c: Comparison, generatedAt?: Date): string {
  const table = comparisonTable(c);
  const endT = Math.max(c.trace.durationSeconds, ...c.rows.map((r) => r.summary.simulatedSeconds));
  const yMax = Math.max(
    10,
    ...c.rows.flatMap((r) => r.samples.map((s) => Math.max(s.demand, s.requested, s.allocated))),
  );
  const fields = [
    'policy',
    'writes',
    'churn',
    'idleIpSeconds',
    'podWaitP50Seconds',
    'podWaitP99Seconds',
    'podWaitMaxSeconds',
    'writesRatio',
    'churnRatio',
    'idleRatio',
  ];
  const head = comparisonHeaders()
    .map((h) => `<th>${escapeHtml(h)}</th>`)
    .join('');
  const body = table
    .map((r) => {
      const cls =
        r.policy === 'cns-v2' ? ' class="base"' : r.policy === 'auto' ? ' class="auto"' : '';
      const cells = tableCells(r)
        .map((cell, i) => `<td data-field="${fields[i]}">${escapeHtml(cell)}</td>`)
        .join('');
      return `<tr data-policy="${escapeHtml(r.policy)}"${cls}>${cells}</tr>`;
    })
    .join('\n');
  const legend = SERIES.map(
    (s) => `<span><i style="background:${COLOURS[s]}"></i>${s}</span>`,
  ).join('');
  // A close-up of ten minutes past the middle, where the policies have learned what they will.
  const zoomFrom = endT > 1200 ? Math.round(endT * 0.6) : 0;
  const zoomTo = Math.min(endT, zoomFrom + 600);
  const charts = c.rows
    .map(
      (r) =>
        `<figure data-policy="${escapeHtml(r.policy)}"><h2>${escapeHtml(r.policy)}</h2>` +
        `<figcaption>${escapeHtml(r.description)}</figcaption>${policyChart(r, endT, yMax)}` +
        (zoomFrom > 0
          ? `<figcaption>close-up: ${formatSeconds(zoomFrom)} to ${formatSeconds(zoomTo)}</figcaption>` +
            policyChart(r, zoomTo, yMax, zoomFrom, 'zoom')
          : '') +
        '</figure>',
    )
    .join('\n');
  const s = c.scaler;
  const when = generatedAt ? ` Generated ${generatedAt.toISOString()}.` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pool policies on ${escapeHtml(c.trace.name)}</title>
<style>${STYLE}</style></head>
<body>
<h1>Pool policies on ${escapeHtml(c.trace.name)}</h1>
<p class="meta">${escapeHtml(c.trace.description)}. ${(c.trace.durationSeconds / 3600).toFixed(2)} h simulated; batch ${s.batchSize},
requestThresholdPercent ${s.requestThresholdPercent}, releaseThresholdPercent ${s.releaseThresholdPercent ?? 150}, max ${s.maxIPCount};
${escapeHtml(controlPlaneSentence(c))}. Each policy runs the product's own monitor and IP store
(pool-monitor simulate); peers are models of their documented rules. Pod wait: from a pod's creation to the CNI request that
got its IP. Ratios are to cns-v2.${when}</p>
<table id="comparison"><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table>
<p class="legend">${legend}</p>
<div class="grid-of-charts">
${charts}
</div>
</body></html>
`;
}
