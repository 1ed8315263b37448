// A one-line progress bar for the embedded run, redrawn in place with a
// carriage return. Only on a terminal: piped or logged output (CI, `make run
// | tee`) gets nothing, so logs stay one JSON record per line.

/** The bar's text, e.g. `[#####.....]  50%  45s/90s  burst`. Pure. */
export function renderProgressBar(
  elapsedSeconds: number,
  totalSeconds: number,
  width = 30,
  label = '',
): string {
  const fraction = totalSeconds > 0 ? Math.min(1, Math.max(0, elapsedSeconds / totalSeconds)) : 1;
  const filled = Math.round(fraction * width);
  const pct = `${Math.floor(fraction * 100)}%`.padStart(4);
  const time = `${Math.min(Math.round(elapsedSeconds), Math.round(totalSeconds))}s/${Math.round(totalSeconds)}s`;
  const text = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${pct}  ${time}`;
  return label ? `${text}  ${label}` : text;
}

/** Where the bar draws: process.stdout fits. */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export class ProgressBar {
  readonly enabled: boolean;
  private readonly stream: ProgressStream;
  private readonly width: number;
  private drawn = false;

  /** Enabled only when the stream is a TTY (and `enabled` is not forced off). */
  constructor(
    stream: ProgressStream = process.stdout,
    options: { enabled?: boolean; width?: number } = {},
  ) {
    this.stream = stream;
    this.enabled = stream.isTTY === true && options.enabled !== false;
    this.width = options.width ?? 30;
  }

  update(elapsedSeconds: number, totalSeconds: number, label = ''): void {
    if (!this.enabled) return;
    let line = renderProgressBar(elapsedSeconds, totalSeconds, this.width, label);
    const columns = this.stream.columns;
    if (columns && line.length >= columns) line = line.slice(0, columns - 1);
    this.stream.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  /** Clears the bar so the next output starts on a clean line. */
  done(): void {
    if (!this.enabled || !this.drawn) return;
    this.stream.write('\r\x1b[K');
    this.drawn = false;
  }
}
