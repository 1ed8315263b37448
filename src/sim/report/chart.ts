// A fixed-size plain-text chart of the three series the report is about:
// demand (pods holding IPs), requested IPs (NNC spec) and allocated IPs (NNC
// status), over time. ASCII only and no colour, so it reads the same in a
// terminal, a CI log and a pasted issue comment.
import type { Sample } from '../summary.ts';

export interface ChartOptions {
  /** Plot columns, without the axis. Default 60. */
  width?: number;
  /** Plot rows. Default 12. */
  height?: number;
}

export const SERIES_MARKS = { demand: '*', requested: '-', allocated: 'o', overlap: '#' } as const;

type SeriesName = 'demand' | 'requested' | 'allocated';
const SERIES: readonly SeriesName[] = ['demand', 'requested', 'allocated'];

/** Value of a step-function timeline at time t: the last sample at or before t. */
export function valueAt(samples: readonly Sample[], t: number, series: SeriesName): number {
  let value = 0;
  for (const s of samples) {
    if (s.t > t) break;
    value = s[series];
  }
  return value;
}

export function formatSeconds(t: number): string {
  const s = Math.round(t);
  if (s < 120) return `${s}s`;
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/**
 * Renders the chart as lines of text: a y axis labelled at the top, middle
 * and zero, one column per time slice (the value in force at its start), an
 * x axis labelled with start, middle and end times, and a legend. Cells where
 * two series meet show `#`.
 */
export function renderChart(samples: readonly Sample[], options: ChartOptions = {}): string[] {
  const width = Math.max(2, Math.floor(options.width ?? 60));
  const height = Math.max(2, Math.floor(options.height ?? 12));
  const sorted = [...samples].sort((a, b) => a.t - b.t);
  const t0 = sorted[0]?.t ?? 0;
  const t1 = sorted.at(-1)?.t ?? 0;
  const yMax = Math.max(1, ...sorted.flatMap((s) => SERIES.map((k) => s[k])));

  const grid: string[][] = Array.from({ length: height }, () => Array<string>(width).fill(' '));
  for (let c = 0; c < width; c += 1) {
    const t = t0 + ((t1 - t0) * c) / (width - 1);
    for (const name of SERIES) {
      const v = Math.max(0, valueAt(sorted, t, name));
      const row = height - 1 - Math.round((v / yMax) * (height - 1));
      const line = grid[row]!;
      line[c] = line[c] === ' ' ? SERIES_MARKS[name] : SERIES_MARKS.overlap;
    }
  }

  const labelWidth = String(yMax).length;
  const mid = Math.round(yMax / 2);
  const midRow = height - 1 - Math.round((mid / yMax) * (height - 1));
  const lines = grid.map((cells, r) => {
    let label = '';
    if (r === 0) label = String(yMax);
    else if (r === height - 1) label = '0';
    else if (r === midRow) label = String(mid);
    return `${label.padStart(labelWidth)} |${cells.join('')}`;
  });
  lines.push(`${' '.repeat(labelWidth)} +${'-'.repeat(width)}`);

  const start = formatSeconds(0);
  const middle = formatSeconds((t1 - t0) / 2);
  const end = formatSeconds(t1 - t0);
  const axis = Array<string>(width).fill(' ');
  const put = (text: string, at: number) => {
    const from = Math.max(0, Math.min(width - text.length, at));
    for (let i = 0; i < text.length; i += 1) axis[from + i] = text[i]!;
  };
  put(start, 0);
  put(middle, Math.floor(width / 2 - middle.length / 2));
  put(end, width - end.length);
  lines.push(`${' '.repeat(labelWidth + 2)}${axis.join('')}`.trimEnd());
  lines.push(
    `${' '.repeat(labelWidth + 2)}${SERIES_MARKS.demand} demand  ${SERIES_MARKS.requested} requested  ` +
      `${SERIES_MARKS.allocated} allocated  ${SERIES_MARKS.overlap} overlap`,
  );
  return lines.map((l) => l.trimEnd());
}
