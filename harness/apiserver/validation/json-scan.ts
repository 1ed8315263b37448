// One pass over a JSON text for what JSON.parse does not say: the fields an
// object repeats (JSON.parse keeps the last, as Go's decoder does, and says
// nothing; kube-apiserver reports them, sigs.k8s.io/json UnmarshalStrict), and
// where each field first appears, so issues can be listed in the order of the
// body. Paths are written as kube-apiserver writes them: `spec.containers[0].name`.
// The text is known to be valid JSON (JSON.parse read it first).

export interface JsonScan {
  /** Each repeated field: its path and the offset of the repeat, in the order of the text. */
  duplicates: { path: string; offset: number }[];
  /** The offset of each field's first appearance (only when asked for). */
  firstOffsets: Map<string, number>;
}

export function scanJson(text: string, offsets = false): JsonScan {
  const out: JsonScan = { duplicates: [], firstOffsets: new Map() };
  let i = 0;
  const ws = (): void => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    let escaped = false;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x5c /* \ */) {
        escaped = true;
        i += 2;
      } else if (c === 0x22 /* " */) break;
      else i++;
    }
    i++; // closing quote
    const raw = text.slice(start, i);
    return escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
  };
  const value = (path: string): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const seen = new Set<string>();
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        const at = i;
        const key = str();
        const child = path ? `${path}.${key}` : key;
        if (seen.has(key)) out.duplicates.push({ path: child, offset: at });
        else {
          seen.add(key);
          if (offsets && !out.firstOffsets.has(child)) out.firstOffsets.set(child, at);
        }
        ws();
        i++; // colon
        value(child);
        ws();
        if (text[i] === ',') i++;
        else {
          i++; // closing brace
          return;
        }
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        value(`${path}[${n}]`);
        ws();
        if (text[i] === ',') i++;
        else {
          i++;
          return;
        }
      }
    } else if (c === '"') str();
    else {
      while (i < text.length && !/[\s,\]}]/.test(text[i] as string)) i++;
    }
  };
  value('');
  return out;
}

/**
 * Whether a JSON text repeats a field, cheaply: outside strings each member
 * has one colon, so fewer members in the parsed value than colons in the text
 * means a repeat (the common body has none and is not scanned further).
 */
export function repeatsFields(text: string, parsed: unknown): boolean {
  let colons = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++)
        if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (c === 0x3a /* : */) colons++;
  }
  return colons !== members(parsed);
}

function members(v: unknown): number {
  if (Array.isArray(v)) {
    let sum = 0;
    for (const x of v) sum += members(x);
    return sum;
  }
  if (v === null || typeof v !== 'object') return 0;
  let sum = 0;
  for (const k in v) sum += 1 + members((v as Record<string, unknown>)[k]);
  return sum;
}
