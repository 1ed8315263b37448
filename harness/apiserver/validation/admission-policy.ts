// ValidatingAdmissionPolicy and its binding as kube-apiserver validates them
// when they are written (pkg/apis/admissionregistration/validation/validation.go
// validateValidatingAdmissionPolicySpec, validateValidatingAdmissionPolicyBindingSpec),
// for the rules the product's manifests meet: every CEL expression (validations'
// expression and messageExpression, matchConditions, variables) is compiled
// and one that does not compile is refused, `spec.validations[0].expression:
// Invalid value: "...": compilation failed: ERROR: <input>:1:3: Syntax error:
// ...`; matchConstraints and its resourceRules are required; validations or
// auditAnnotations must have an item; failurePolicy, reason and
// validationActions take only their enumerated values.
// The compile step is the server's own CEL (admission/cel.ts, @bufbuild/cel):
// its syntax errors are worded by that parser, not cel-go's, in cel-go's
// layout (ERROR: <input>:line:column: message, the expression, a caret). An
// identifier no variable declares is refused as cel-go's checker refuses it
// (`undeclared reference to 'x' (in container '')`).
import { parse } from '@bufbuild/cel';
import type { StatusCause } from '../errors.ts';
import { compileError } from '../admission/cel.ts';
import {
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../../src/kube/json-object.ts';
import { goString } from './go-value.ts';

/** The variables of a ValidatingAdmissionPolicy's CEL environment, and the type names CEL declares. */
const DECLARED = new Set([
  'object',
  'oldObject',
  'request',
  'params',
  'namespaceObject',
  'variables',
  'authorizer',
  'int',
  'uint',
  'double',
  'bool',
  'string',
  'bytes',
  'list',
  'map',
  'null_type',
  'type',
  'dyn',
]);

interface Node {
  id?: bigint;
  exprKind?: { case?: string; value?: unknown };
}

/** The first identifier `expr` reads that neither the environment nor a comprehension declares. */
function undeclared(e: Node | undefined, scope: Set<string>): Node | undefined {
  if (!e?.exprKind) return undefined;
  const v = e.exprKind.value as Record<string, unknown>;
  const sub = (x: unknown, s = scope): Node | undefined => undeclared(x as Node, s);
  switch (e.exprKind.case) {
    case 'identExpr':
      return DECLARED.has(v.name as string) || scope.has(v.name as string) ? undefined : e;
    case 'selectExpr':
      return sub(v.operand);
    case 'callExpr':
      return (
        (v.target ? sub(v.target) : undefined) ??
        (v.args as Node[]).map((a) => sub(a)).find(Boolean)
      );
    case 'listExpr':
      return (v.elements as Node[]).map((a) => sub(a)).find(Boolean);
    case 'structExpr':
      return (v.entries as { keyKind?: { case?: string; value?: unknown }; value?: Node }[])
        .flatMap((en) => [
          en.keyKind?.case === 'mapKey' ? sub(en.keyKind.value) : undefined,
          sub(en.value),
        ])
        .find(Boolean);
    case 'comprehensionExpr': {
      const inner = new Set(scope);
      for (const k of ['iterVar', 'iterVar2', 'accuVar'])
        if (typeof v[k] === 'string' && v[k]) inner.add(v[k]);
      return (
        sub(v.iterRange) ??
        sub(v.accuInit) ??
        sub(v.loopCondition, inner) ??
        sub(v.loopStep, inner) ??
        sub(v.result, inner)
      );
    }
    default:
      return undefined;
  }
}

/** cel-go's way of showing where: the expression's line, and a caret under the column. */
function located(expression: string, line: number, column: number, message: string): string {
  const text = expression.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${column}: ${message}\n | ${text}\n | ${'.'.repeat(Math.max(0, column - 1))}^`;
}

/** Why `expression` does not compile, as the field error's detail; undefined when it does. */
export function celCompileFailure(expression: string): string | undefined {
  const err = compileError(expression);
  if (err !== undefined) {
    const m = /<input>:(\d+):(\d+): (.*)$/s.exec(err);
    if (!m) return err;
    return `compilation failed: ${located(expression, Number(m[1]), Number(m[2]), `Syntax error: ${m[3] ?? ''}`)}`;
  }
  const parsed = parse(expression) as unknown as {
    expr?: Node;
    sourceInfo?: { positions?: Record<string, number>; lineOffsets?: number[] };
  };
  const bad = undeclared(parsed.expr, new Set());
  if (!bad) return undefined;
  const name = (bad.exprKind?.value as { name: string }).name;
  const offset = parsed.sourceInfo?.positions?.[String(bad.id)] ?? 0;
  const before = expression.slice(0, offset).split('\n');
  const line = before.length;
  const column = (before[line - 1]?.length ?? 0) + 1;
  return `compilation failed: ${located(expression, line, column, `undeclared reference to '${name}' (in container '')`)}`;
}

const list = (v: Json | undefined): Json[] => (Array.isArray(v) ? v : []);
const obj = (v: Json | undefined): JsonObject => (isObject(v) ? v : {});

function notSupported(field: string, value: Json | undefined, allowed: string[]): StatusCause {
  return {
    reason: 'FieldValueNotSupported',
    field,
    message: `Unsupported value: ${goString(String(value))}: supported values: ${allowed.map(goString).join(', ')}`,
  };
}

function expressionCauses(
  field: string,
  expression: Json | undefined,
  what = 'expression',
): StatusCause[] {
  if (typeof expression !== 'string' || expression.trim() === '')
    return [
      { reason: 'FieldValueRequired', field, message: `Required value: ${what} is not specified` },
    ];
  const failure = celCompileFailure(expression);
  return failure === undefined
    ? []
    : [
        {
          reason: 'FieldValueInvalid',
          field,
          message: `Invalid value: ${goString(expression)}: ${failure}`,
        },
      ];
}

export function validatePolicy(o: KObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = obj(o.spec);
  const fp = spec.failurePolicy;
  if (fp !== undefined && fp !== null && fp !== 'Fail' && fp !== 'Ignore')
    causes.push(notSupported('spec.failurePolicy', fp, ['Fail', 'Ignore']));
  if (!isObject(spec.matchConstraints))
    causes.push({
      reason: 'FieldValueRequired',
      field: 'spec.matchConstraints',
      message: 'Required value',
    });
  else if (list(spec.matchConstraints.resourceRules).length === 0)
    causes.push({
      reason: 'FieldValueRequired',
      field: 'spec.matchConstraints.resourceRules',
      message: 'Required value',
    });
  list(spec.matchConditions).forEach((c, i) => {
    causes.push(...expressionCauses(`spec.matchConditions[${i}].expression`, obj(c).expression));
  });
  list(spec.variables).forEach((v, i) => {
    causes.push(...expressionCauses(`spec.variables[${i}].expression`, obj(v).expression));
  });
  const validations = list(spec.validations);
  if (validations.length === 0 && list(spec.auditAnnotations).length === 0)
    causes.push({
      reason: 'FieldValueRequired',
      field: 'spec.validations',
      message: 'Required value: validations or auditAnnotations must contain at least one item',
    });
  validations.forEach((raw, i) => {
    const v = obj(raw);
    causes.push(...expressionCauses(`spec.validations[${i}].expression`, v.expression));
    if (typeof v.messageExpression === 'string' && v.messageExpression.trim() !== '')
      causes.push(
        ...expressionCauses(`spec.validations[${i}].messageExpression`, v.messageExpression),
      );
    const reasons = ['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge'];
    if (v.reason !== undefined && v.reason !== null && !reasons.includes(String(v.reason)))
      causes.push(notSupported(`spec.validations[${i}].reason`, v.reason, reasons));
  });
  return causes;
}

export function validatePolicyBinding(o: KObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = obj(o.spec);
  if (typeof spec.policyName !== 'string' || spec.policyName === '')
    causes.push({
      reason: 'FieldValueRequired',
      field: 'spec.policyName',
      message: 'Required value',
    });
  const actions = list(spec.validationActions);
  if (actions.length === 0)
    causes.push({
      reason: 'FieldValueRequired',
      field: 'spec.validationActions',
      message: 'Required value: at least one validation action is required',
    });
  actions.forEach((a, i) => {
    if (!['Deny', 'Warn', 'Audit'].includes(String(a)))
      causes.push(notSupported(`spec.validationActions[${i}]`, a, ['Audit', 'Deny', 'Warn']));
  });
  if (actions.includes('Deny') && actions.includes('Warn'))
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.validationActions',
      message: `Invalid value: []v1.ValidationAction{${actions.map((a) => goString(String(a))).join(', ')}}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)`,
    });
  return causes;
}
