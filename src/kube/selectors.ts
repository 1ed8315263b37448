// Label and field selectors, parsed once per request and matched per object.
// Labels: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`.
// Fields: `path=v`, `path==v`, `path!=v` on any dotted path (metadata.name,
// spec.nodeName, status.phase, involvedObject.uid, ...); a missing field reads
// as "" and booleans as "true"/"false", as the real server's field sets do.
import { getPath, type KObject } from './json-object.ts';

/** A selector that does not parse; the message is the one kube-apiserver gives (a 400 there). */
export class SelectorError extends Error {
  override readonly name = 'SelectorError';
}

function badSelector(message: string): SelectorError {
  return new SelectorError(message);
}

export interface Requirement {
  key: string;
  op: 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin';
  values: string[];
}

export type Selector = (obj: KObject) => boolean;

const matchAll: Selector = () => true;

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t.length > 0);
}

const LABEL_KEY =
  /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const LABEL_VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

export function parseLabelSelector(s: string | null | undefined): Requirement[] {
  if (!s) return [];
  return splitTerms(s).map((term) => {
    let m = /^(\S+)\s+(in|notin)\s+\((.*)\)$/.exec(term);
    let req: Requirement;
    if (m) {
      const values = (m[3] as string).split(',').map((v) => v.trim());
      req = { key: m[1] as string, op: m[2] as 'in' | 'notin', values };
    } else if ((m = /^([^!=\s]+)\s*(==|!=|=)\s*(\S*)$/.exec(term))) {
      req = { key: m[1] as string, op: m[2] === '!=' ? '!=' : '=', values: [m[3] as string] };
    } else if ((m = /^!\s*(\S+)$/.exec(term))) {
      req = { key: m[1] as string, op: '!exists', values: [] };
    } else if (/^\S+$/.test(term)) {
      req = { key: term, op: 'exists', values: [] };
    } else {
      throw badSelector(`unable to parse requirement: found '${term}', expected a label selector`);
    }
    if (!LABEL_KEY.test(req.key)) throw badSelector(`invalid label key "${req.key}"`);
    for (const v of req.values)
      if (!LABEL_VALUE.test(v) || v.length > 63) throw badSelector(`invalid label value: "${v}"`);
    return req;
  });
}

function matches(req: Requirement, value: string | undefined): boolean {
  switch (req.op) {
    case 'exists':
      return value !== undefined;
    case '!exists':
      return value === undefined;
    case '=':
      return value === req.values[0];
    case '!=':
      return value !== req.values[0];
    case 'in':
      return value !== undefined && req.values.includes(value);
    case 'notin':
      return value === undefined || !req.values.includes(value);
  }
}

export function labelSelector(s: string | null | undefined): Selector {
  const reqs = parseLabelSelector(s);
  if (reqs.length === 0) return matchAll;
  return (obj) => {
    const labels = obj.metadata.labels as Record<string, string> | undefined;
    return reqs.every((r) => matches(r, labels?.[r.key]));
  };
}

export function parseFieldSelector(s: string | null | undefined): Requirement[] {
  if (!s) return [];
  return splitTerms(s).map((term) => {
    const m = /^([A-Za-z0-9_.[\]-]+)\s*(==|!=|=)\s*(.*)$/.exec(term);
    if (!m) throw badSelector(`invalid selector: '${term}'; can't understand '${term}'`);
    return {
      key: m[1] as string,
      op: m[2] === '!=' ? '!=' : '=',
      values: [(m[3] as string).trim()],
    };
  });
}

/**
 * The string a field selector compares against. `parts` is `path` split at
 * its dots, for callers that match many objects against one path: splitting
 * it again for each object was most of what a watch's matching allocated.
 */
export function fieldValue(
  obj: KObject,
  path: string,
  parts: readonly string[] = path.split('.'),
): string {
  const v = getPath(obj, parts);
  if (v === undefined || v === null) return path === 'spec.hostNetwork' ? 'false' : '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function fieldSelector(s: string | null | undefined): Selector {
  const reqs = parseFieldSelector(s);
  if (reqs.length === 0) return matchAll;
  const terms = reqs.map((req) => ({ req, parts: req.key.split('.') }));
  return (obj) => {
    for (const { req, parts } of terms)
      if (!matches(req, fieldValue(obj, req.key, parts))) return false;
    return true;
  };
}

export function bothSelectors(labels: Selector, fields: Selector): Selector {
  if (labels === matchAll) return fields;
  if (fields === matchAll) return labels;
  return (obj) => labels(obj) && fields(obj);
}
