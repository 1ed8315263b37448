// Server-side field validation, as kube-apiserver (1.27+) does it: the
// `fieldValidation` query parameter (Strict, Warn, Ignore; Warn when absent)
// decides what an unknown or duplicate field in a write's body does.
//   - Strict: 400 BadRequest, `strict decoding error: unknown field "spec.foo",
//     duplicate field "spec.paused"` (after `<Kind> in version "v1" cannot be
//     handled as a <Kind>: ` for a create or update);
//   - Warn: the object is written without the unknown fields and each issue
//     is a `Warning: 299 - "unknown field \"spec.foo\""` response header;
//   - Ignore: written without them, silently.
// Unknown fields of built-in kinds are those their Go types do not declare
// (field-schema.ts); of custom resources, those the CRD's structural schema
// prunes (schema.ts). Sources: k8s.io/apiserver/pkg/endpoints/handlers
// (create.go, update.go, patch.go: fieldValidation, the strict decoding
// errors, addStrictDecodingWarnings), sigs.k8s.io/json (UnmarshalStrict: the
// unknown/duplicate field paths), and the message shapes pinned by
// test/integration/apiserver/field_validation_test.go:
//   - a JSON create/update of a built-in kind: every issue in the order of the
//     body, a duplicate of an unknown field reported only as unknown;
//   - a YAML body: `yaml: unmarshal errors:\n  line N: key "x" already set in
//     map` first (each line its own warning), then the unknown fields sorted;
//   - a patch, and a custom resource: the body's duplicates in order, then the
//     unknown fields of the resulting object, sorted;
//   - an apply patch: duplicates as for YAML (`error strict decoding YAML:
//     error converting YAML to JSON: ...`); an unknown field of a built-in kind
//     is refused whatever the directive, by the typed conversion of the apply
//     (k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go
//     Apply: `failed to create typed patch object (...): .spec.foo: field not
//     declared in schema`, a plain error: 500 with no reason).
import YAML from 'yaml';
import { ApiError, badRequest, invalid } from '../errors.ts';
import { isObject, type Json, type KObject } from '../../../src/kube/json-object.ts';
import type { ResourceInfo } from '../resources.ts';
import { builtinSchema, type FieldType } from './field-schema.ts';
import { repeatsFields, scanJson } from './json-scan.ts';

export type Directive = 'Strict' | 'Warn' | 'Ignore';
export type WriteVerb = 'create' | 'update' | 'patch' | 'apply';

/**
 * The request's directive. An unsupported value is refused as
 * k8s.io/apimachinery/pkg/apis/meta/internalversion/validation ValidateCreateOptions
 * (and Update/Patch) refuse it: 422 on `<Verb>Options.meta.k8s.io`.
 */
export function directiveOf(q: URLSearchParams, verb: WriteVerb): Directive {
  const v = q.get('fieldValidation') ?? '';
  if (v === '') return 'Warn';
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v;
  const options =
    verb === 'create' ? 'CreateOptions' : verb === 'update' ? 'UpdateOptions' : 'PatchOptions';
  throw invalid(options, 'meta.k8s.io', '', [
    {
      reason: 'FieldValueNotSupported',
      field: 'fieldValidation',
      message: `Unsupported value: "${v}": supported values: "", "Ignore", "Strict", "Warn"`,
    },
  ]);
}

/** The unknown fields of `value` under `type`, in the order of the object, removed from it. */
export function pruneUnknown(value: Json, type: FieldType, path: string, out: string[]): void {
  if (type === 'any' || type === 'leaf' || value === null || typeof value !== 'object') return;
  if ('list' in type) {
    if (Array.isArray(value))
      value.forEach((v, i) => pruneUnknown(v, type.list, `${path}[${i}]`, out));
    return;
  }
  if (!isObject(value)) return;
  const at = (k: string): string => (path ? `${path}.${k}` : k);
  if ('map' in type) {
    for (const [k, v] of Object.entries(value)) pruneUnknown(v, type.map, at(k), out);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const sub = type.fields[k];
    if (sub === undefined) {
      out.push(at(k));
      delete value[k];
    } else pruneUnknown(v, sub, at(k), out);
  }
}

/** True when `path` is `base` or lies under it. */
const under = (path: string, base: string): boolean =>
  path === base ||
  (path.startsWith(base) && (path[base.length] === '.' || path[base.length] === '['));

/**
 * One write request's field validation: parses its body (noting duplicate
 * fields), then settles, once, what the object about to be stored has that its
 * kind does not know.
 */
export class FieldCheck {
  readonly directive: Directive;
  private readonly verb: WriteVerb;
  private readonly warn: (text: string) => void;
  private format: 'json' | 'yaml' = 'json';
  private text = '';
  /** Duplicates of a JSON body (path, offset of the repeat). */
  private jsonDuplicates: { path: string; offset: number }[] = [];
  /** Duplicates of a YAML body, as go-yaml words them. */
  private yamlDuplicates: string[] = [];
  private settled = false;

  constructor(directive: Directive, verb: WriteVerb, warn: (text: string) => void) {
    this.directive = directive;
    this.verb = verb;
    this.warn = warn;
  }

  /** Parses a write's body: JSON (merge, strategic and JSON patches too) or YAML (and apply patches). */
  parse(raw: Buffer, contentType: string): Json {
    const text = raw.toString('utf8');
    if (text.trim() === '') throw badRequest('the request body is empty');
    this.text = text;
    const yaml = /yaml/.test(contentType);
    this.format = yaml ? 'yaml' : 'json';
    try {
      if (!yaml) {
        const value = JSON.parse(text) as Json;
        if (this.directive !== 'Ignore' && repeatsFields(text, value))
          this.jsonDuplicates = scanJson(text).duplicates;
        return value;
      }
      return this.parseYaml(text);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw badRequest(`error decoding ${yaml ? 'YAML' : 'JSON'} body: ${(err as Error).message}`);
    }
  }

  private parseYaml(text: string): Json {
    if (text.trimStart().startsWith('{')) {
      // JSON is YAML: parsed as JSON when it is, with go-yaml's line of each duplicate.
      let value: Json | undefined;
      try {
        value = JSON.parse(text) as Json;
      } catch {
        value = undefined;
      }
      if (value !== undefined && !text.includes('"__proto__"')) {
        if (this.directive !== 'Ignore' && repeatsFields(text, value))
          this.yamlDuplicates = scanJson(text).duplicates.map(
            (d) =>
              `line ${lineOf(text, d.offset)}: key ${JSON.stringify(lastKey(d.path))} already set in map`,
          );
        return value;
      }
    }
    const doc = YAML.parseDocument(text, { uniqueKeys: false });
    if (doc.errors.length > 0) throw new Error(doc.errors[0]?.message ?? 'invalid YAML');
    if (this.directive !== 'Ignore') {
      const strict = YAML.parseDocument(text, { uniqueKeys: true });
      this.yamlDuplicates = strict.errors
        .filter((e) => e.code === 'DUPLICATE_KEY')
        .map((e) => {
          const line = e.linePos?.[0].line ?? 0;
          const key = (text.split('\n')[line - 1] ?? '').trim().split(':')[0] ?? '';
          return `line ${line}: key ${JSON.stringify(key.replace(/^["']|["']$/g, ''))} already set in map`;
        });
    }
    return doc.toJS() as Json;
  }

  /**
   * An apply patch's fields, before it is merged: a built-in kind's unknown
   * field fails the typed conversion whatever the directive; duplicates follow it.
   */
  applied(res: ResourceInfo, patch: KObject): void {
    const schema = builtinSchema(res);
    if (schema) {
      const unknown: string[] = [];
      pruneUnknown(structuredClone(patch), schema, '', unknown);
      if (unknown.length > 0) {
        const errs = unknown.map((p) => `.${p}: field not declared in schema`);
        const ns = typeof patch.metadata.namespace === 'string' ? patch.metadata.namespace : '';
        const gv = res.group ? `${res.group}/${res.version}` : `/${res.version}`;
        throw new ApiError(
          500,
          '',
          `failed to create typed patch object (${ns}/${String(patch.metadata.name ?? '')}; ${gv}, Kind=${res.kind}): ${
            errs.length === 1 ? errs[0] : `errors:\n  ${errs.join('\n  ')}`
          }`,
        );
      }
    }
    if (this.yamlDuplicates.length > 0 && this.directive === 'Strict')
      throw badRequest(
        `error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  ${this.yamlDuplicates.join('\n  ')}`,
      );
  }

  /**
   * The object about to be validated and stored: prunes a built-in kind's
   * unknown fields (a custom resource's were pruned by its schema: `crPruned`),
   * then refuses (Strict) or warns (Warn) about them and the body's duplicates.
   */
  settle(res: ResourceInfo, obj: KObject, crPruned: string[]): void {
    if (this.settled) return;
    this.settled = true;
    const schema = builtinSchema(res);
    const unknown: string[] = [...crPruned];
    if (schema) pruneUnknown(obj, schema, '', unknown);
    if (this.directive === 'Ignore') return;
    const issues = this.issues(res, unknown, schema !== undefined);
    if (issues.length === 0) return;
    if (this.directive === 'Warn') {
      for (const i of issues) this.warn(i);
      return;
    }
    const yamlLines =
      this.format === 'yaml' && this.yamlDuplicates.length > 0 && this.verb !== 'apply';
    const list = yamlLines
      ? [
          `yaml: unmarshal errors:\n  ${this.yamlDuplicates.join('\n  ')}`,
          ...issues.slice(this.yamlDuplicates.length),
        ]
      : issues;
    const message = `strict decoding error: ${list.join(', ')}`;
    throw badRequest(
      this.verb === 'create' || this.verb === 'update'
        ? `${res.kind} in version "${res.version}" cannot be handled as a ${res.kind}: ${message}`
        : message,
    );
  }

  /** Every issue, in kube-apiserver's order (see the head of this file). */
  private issues(res: ResourceInfo, unknown: string[], typed: boolean): string[] {
    const unknownText = (p: string): string => `unknown field ${JSON.stringify(p)}`;
    const dupText = (p: string): string => `duplicate field ${JSON.stringify(p)}`;
    if (this.verb === 'apply') return this.yamlDuplicates.slice();
    if (this.format === 'yaml')
      return [...this.yamlDuplicates, ...[...unknown].sort().map(unknownText)];
    const bodyIsObject = this.verb === 'create' || this.verb === 'update';
    if (!bodyIsObject || !typed || res.crdName !== undefined)
      return [
        ...this.jsonDuplicates.map((d) => dupText(d.path)),
        ...[...unknown].sort().map(unknownText),
      ];
    // A typed create or update: in the order of the body.
    const dups = this.jsonDuplicates.filter((d) => !unknown.some((u) => under(d.path, u)));
    if (unknown.length === 0) return dups.map((d) => dupText(d.path));
    const firsts = scanJson(this.text, true).firstOffsets;
    return [
      ...dups.map((d) => ({ at: d.offset, text: dupText(d.path) })),
      ...unknown.map((u) => ({
        at: firsts.get(u) ?? Number.MAX_SAFE_INTEGER,
        text: unknownText(u),
      })),
    ]
      .sort((a, b) => a.at - b.at)
      .map((i) => i.text);
  }
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function lastKey(path: string): string {
  const m = /(?:^|\.)([^.[\]]*)$/.exec(path.replace(/\[\d+\]$/, ''));
  return m?.[1] ?? path;
}
