// A small parser for the Prometheus text format, enough for the tests to
// read values by name and labels instead of matching raw strings.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  help: Map<string, string>;
  type: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseProm(text: string): Exposition {
  const out: Exposition = { samples: [], help: new Map(), type: new Map() };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      (meta[1] === 'HELP' ? out.help : out.type).set(meta[2] as string, meta[3] as string);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = l[2] as string;
    out.samples.push({ name: m[1] as string, labels, value: promNumber(m[3] as string) });
  }
  return out;
}

/** The value of the one sample named `name` whose labels include `labels`. */
/** A sample's value: Prometheus writes infinities as +Inf and -Inf. */
function promNumber(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

export function value(exp: Exposition, name: string, labels: Record<string, string> = {}): number {
  const hits = exp.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (hits.length !== 1)
    throw new Error(`${hits.length} samples for ${name} ${JSON.stringify(labels)}`);
  return (hits[0] as Sample).value;
}
