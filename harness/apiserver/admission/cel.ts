// CEL for admission, on @bufbuild/cel: Kubernetes objects (JSON) become CEL
// values as Kubernetes types them (objects and maps are maps, integers are
// int, other numbers double), expressions are parsed and planned once and
// cached, and evaluation never throws: it yields a value or an error message.
import { celEnv, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

export type CelOutcome = { ok: true; value: unknown } | { ok: false; error: string };

type Program = (bindings: Record<string, CelInput>) => unknown;

const env = celEnv({ funcs: strings });
const programs = new Map<string, Program | string>();

/** A JSON value as CEL input: objects → maps, integers → int (bigint), arrays → lists. */
export function toCel(v: unknown): CelInput {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === 'object') {
    if (v instanceof Map) return v as CelInput;
    return new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)])) as CelInput;
  }
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return v as CelInput;
}

function compile(expression: string): Program | string {
  let p = programs.get(expression);
  if (p === undefined) {
    try {
      p = plan(env, parse(expression)) as Program;
    } catch (err) {
      p = `compilation failed: ${(err as Error).message}`;
    }
    if (programs.size > 1000) programs.clear();
    programs.set(expression, p);
  }
  return p;
}

/** A compile error of `expression`, or undefined when it parses. */
export function compileError(expression: string): string | undefined {
  const p = compile(expression);
  return typeof p === 'string' ? p : undefined;
}

/** Evaluates `expression` with already converted bindings. */
export function evaluate(expression: string, bindings: Record<string, CelInput>): CelOutcome {
  const p = compile(expression);
  if (typeof p === 'string') return { ok: false, error: p };
  try {
    const value = p(bindings);
    if (isCelError(value)) return { ok: false, error: value.message };
    return { ok: true, value };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
