// Server-side table output (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`),
// which `kubectl get` asks for: Name, the resource's printer columns (a CRD's
// additionalPrinterColumns), Age. Also the small JSONPath subset those columns use.
import { isObject, type Json, type JsonObject, type KObject } from '../../src/kube/json-object.ts';
import type { PrinterColumn, ResourceInfo } from './resources.ts';

/** Evaluates `.a.b`, `.a[0]`, `.a[*].b` and `.a[?(@.k=="v")].b`; returns every match. */
export function jsonPathValues(obj: Json, path: string): Json[] {
  const trimmed = path.replace(/^\{|\}$/g, '').replace(/^\$/, '');
  const tokens = trimmed.match(/\.[^.[\]]+|\[[^\]]*\]/g) ?? [];
  let cur: Json[] = [obj];
  for (const tok of tokens) {
    const next: Json[] = [];
    for (const v of cur) {
      if (tok.startsWith('.')) {
        if (isObject(v) && v[tok.slice(1)] !== undefined) next.push(v[tok.slice(1)] as Json);
        continue;
      }
      if (!Array.isArray(v)) continue;
      const inner = tok.slice(1, -1);
      const filter = /^\?\(@\.([\w.-]+)\s*==\s*["']?([^"')]*)["']?\)$/.exec(inner);
      if (inner === '*') next.push(...v);
      else if (filter) {
        for (const item of v) {
          const got = jsonPathValues(item, '.' + (filter[1] as string))[0];
          if (got !== undefined && String(got) === filter[2]) next.push(item);
        }
      } else if (/^-?\d+$/.test(inner)) {
        const i = Number(inner);
        const item = v[i < 0 ? v.length + i : i];
        if (item !== undefined) next.push(item);
      }
    }
    cur = next;
  }
  return cur;
}

/** "5s", "3m", "2h", "4d" as kubectl prints ages. */
export function humanAge(from: string | undefined, now: Date): string {
  if (!from) return '<unknown>';
  const secs = Math.max(0, Math.floor((now.getTime() - Date.parse(from)) / 1000));
  if (secs < 120) return `${secs}s`;
  const mins = Math.floor(secs / 60);
  if (mins < 10) return `${mins}m${secs % 60 ? `${secs % 60}s` : ''}`;
  if (mins < 180) return `${mins}m`;
  const hours = Math.floor(mins / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

function columnsOf(res: ResourceInfo): PrinterColumn[] {
  const cols = [...res.printerColumns];
  if (!res.crdName || cols.length === 0)
    if (!cols.some((c) => c.jsonPath === '.metadata.creationTimestamp'))
      cols.push({ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' });
  return cols;
}

function cell(obj: KObject, col: PrinterColumn, now: Date): Json {
  if (col.value) return col.value(obj);
  const values = jsonPathValues(obj, col.jsonPath);
  if (values.length === 0) return col.type === 'date' ? '<unknown>' : null;
  if (col.type === 'date') return humanAge(String(values[0]), now);
  if (values.length > 1)
    return values.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(',');
  const v = values[0] as Json;
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : v;
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function toTable(
  res: ResourceInfo,
  objects: KObject[],
  rv: string,
  include: IncludeObject,
  now: Date,
  extraMeta: JsonObject = {},
): JsonObject {
  const cols = columnsOf(res);
  const columnDefinitions: Json[] = [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description: 'Name must be unique within a namespace.',
      priority: 0,
    },
    ...cols.map((c) => ({
      name: c.name,
      type: c.type === 'date' ? 'string' : c.type,
      format: c.format ?? '',
      description: c.description ?? '',
      priority: c.priority ?? 0,
    })),
  ];
  const rows = objects.map((o) => {
    const row: JsonObject = {
      cells: [String(o.metadata.name), ...cols.map((c) => cell(o, c, now))],
    };
    if (include === 'Object') row.object = o;
    else if (include === 'Metadata')
      row.object = {
        kind: 'PartialObjectMetadata',
        apiVersion: 'meta.k8s.io/v1',
        metadata: o.metadata,
      };
    return row;
  });
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: rv, ...extraMeta },
    columnDefinitions,
    rows,
  };
}

/** Whether the Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept) && /g=meta\.k8s\.io/.test(accept);
}
