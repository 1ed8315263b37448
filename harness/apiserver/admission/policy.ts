// ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1)
// as Kubernetes evaluates them, for the documented subset: matchConstraints
// and binding matchResources (resourceRules, excludeResourceRules,
// namespaceSelector, objectSelector), matchConditions, variables,
// validations (expression, message, messageExpression, reason),
// failurePolicy and validationActions (Deny, Warn; Audit is accepted and
// has no audit log to go to). Parameters (paramKind/paramRef) are not
// supported: such a binding fails by its policy's failurePolicy.
import type { CelInput } from '@bufbuild/cel';
import type { KObject } from '../../../src/kube/json-object.ts';
import type { UserInfo } from '../auth/user.ts';
import { evaluate, toCel } from './cel.ts';
import { matchesLabelSelector, type LabelSelectorSpec } from './label-selector.ts';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionAttributes {
  operation: Operation;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  kind: string;
  name: string;
  namespace: string;
  user: UserInfo;
  dryRun: boolean;
  object: KObject | null;
  oldObject: KObject | null;
  namespaceObject: KObject | null;
}

export interface Denial {
  policy: string;
  binding: string;
  message: string;
  /** metav1.StatusReason: Invalid (default), Forbidden, Unauthorized, RequestEntityTooLarge. */
  reason: string;
}

export interface AdmissionResult {
  denial?: Denial;
  warnings: string[];
}

interface RuleWithOperations {
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  operations?: string[];
  scope?: string;
  resourceNames?: string[];
}

interface MatchResources {
  resourceRules?: RuleWithOperations[];
  excludeResourceRules?: RuleWithOperations[];
  namespaceSelector?: LabelSelectorSpec;
  objectSelector?: LabelSelectorSpec;
}

interface NamedExpression {
  name: string;
  expression: string;
}

interface Validation {
  expression: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
}

const anyOf = (list: string[] | undefined, v: string): boolean =>
  Array.isArray(list) && (list.includes('*') || list.includes(v));

/** Whether one rule matches, as Kubernetes' admission rule matcher: "*" is every resource, "r/*" every subresource of r, "*\/*" everything. */
export function ruleMatches(rule: RuleWithOperations, a: AdmissionAttributes): boolean {
  if (!anyOf(rule.operations, a.operation)) return false;
  if (!anyOf(rule.apiGroups, a.group) || !anyOf(rule.apiVersions, a.version)) return false;
  const resourceOk = (rule.resources ?? []).some((entry) => {
    const [res, sub = ''] = entry.split(/\/(.*)/s) as [string, string?];
    return (res === '*' || res === a.resource) && (sub === '*' || sub === a.subresource);
  });
  if (!resourceOk) return false;
  const scope = rule.scope ?? '*';
  if (scope === 'Cluster' && a.namespace !== '') return false;
  if (scope === 'Namespaced' && a.namespace === '') return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(a.name);
}

const labelsOf = (o: KObject | null): Record<string, string> =>
  (o?.metadata.labels as Record<string, string> | undefined) ?? {};

export function matchResources(m: MatchResources | undefined, a: AdmissionAttributes): boolean {
  if (!m) return false;
  if (!(m.resourceRules ?? []).some((r) => ruleMatches(r, a))) return false;
  if ((m.excludeResourceRules ?? []).some((r) => ruleMatches(r, a))) return false;
  if (m.objectSelector) {
    const objects = [a.object, a.oldObject].filter((o): o is KObject => o !== null);
    if (!objects.some((o) => matchesLabelSelector(m.objectSelector, labelsOf(o)))) return false;
  }
  if (m.namespaceSelector && a.namespace !== '')
    if (!matchesLabelSelector(m.namespaceSelector, labelsOf(a.namespaceObject))) return false;
  return true;
}

/** The `request` variable: an AdmissionRequest as JSON (empty fields omitted, as it is serialized). */
export function requestOf(a: AdmissionAttributes): Record<string, unknown> {
  const userInfo: Record<string, unknown> = { username: a.user.username };
  if (a.user.uid) userInfo.uid = a.user.uid;
  if (a.user.groups.length > 0) userInfo.groups = a.user.groups;
  if (Object.keys(a.user.extra).length > 0) userInfo.extra = a.user.extra;
  const kind = { group: a.group, version: a.version, kind: a.kind };
  const resource = { group: a.group, version: a.version, resource: a.resource };
  const r: Record<string, unknown> = {
    kind,
    resource,
    requestKind: kind,
    requestResource: resource,
    name: a.name,
    namespace: a.namespace,
    operation: a.operation,
    userInfo,
    dryRun: a.dryRun,
  };
  if (a.subresource) {
    r.subResource = a.subresource;
    r.requestSubResource = a.subresource;
  }
  return r;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** CEL bindings made on first read (once each), from these makers. */
export function lazyBindings(makers: Record<string, () => CelInput>): Record<string, CelInput> {
  const out: Record<string, CelInput> = {};
  for (const [name, make] of Object.entries(makers)) {
    let made = false;
    let value: CelInput;
    Object.defineProperty(out, name, {
      enumerable: true,
      configurable: true,
      get: () => {
        if (!made) {
          value = make();
          made = true;
        }
        return value;
      },
      set: (v: CelInput) => {
        value = v;
        made = true;
      },
    });
  }
  return out;
}

/** Evaluates one policy under one binding; a denial, a warning or nothing. */
export function evaluatePolicy(
  policy: KObject,
  binding: KObject,
  a: AdmissionAttributes,
): { denial?: Denial; warning?: string } {
  const spec = (policy.spec ?? {}) as Record<string, unknown>;
  const bspec = (binding.spec ?? {}) as Record<string, unknown>;
  const policyName = String(policy.metadata.name);
  const bindingName = String(binding.metadata.name);
  if (!matchResources(spec.matchConstraints as MatchResources, a)) return {};
  if (
    bspec.matchResources !== undefined &&
    !matchResources(bspec.matchResources as MatchResources, a)
  )
    return {};
  const fail = spec.failurePolicy !== 'Ignore';
  const actions = Array.isArray(bspec.validationActions)
    ? (bspec.validationActions as string[])
    : [];
  const decide = (message: string, reason = 'Invalid'): { denial?: Denial; warning?: string } => {
    if (actions.includes('Deny'))
      return { denial: { policy: policyName, binding: bindingName, message, reason } };
    if (actions.includes('Warn'))
      return {
        warning: `Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}': ${message}`,
      };
    return {};
  };
  if (spec.paramKind !== undefined || bspec.paramRef !== undefined)
    return fail
      ? decide('policy parameters (paramKind/paramRef) are not supported by this server')
      : {};

  // Converted when an expression first reads them: most writes a policy
  // matches fail its matchConditions on `request` alone (another user).
  const bindings = lazyBindings({
    object: () => toCel(a.object),
    oldObject: () => toCel(a.oldObject),
    request: () => toCel(requestOf(a)),
    params: () => null,
    namespaceObject: () => toCel(a.namespaceObject),
  });
  const variables = new Map<string, CelInput>();
  const failedVariables = new Map<string, string>();
  bindings.variables = variables as unknown as CelInput;
  /** The error of a variable `expression` uses, as Kubernetes reports it lazily. */
  const variableError = (expression: string): string | undefined => {
    for (const [name, error] of failedVariables)
      if (new RegExp(`\\bvariables\\.${name}\\b`).test(expression)) return error;
    return undefined;
  };
  const run = (expression: string) => {
    const err = variableError(expression);
    return err !== undefined ? { ok: false as const, error: err } : evaluate(expression, bindings);
  };

  for (const c of (spec.matchConditions as NamedExpression[] | undefined) ?? []) {
    const r = run(c.expression);
    if (!r.ok || typeof r.value !== 'boolean') {
      if (!fail) return {};
      const why = r.ok ? 'did not evaluate to a bool' : r.error;
      return decide(`failed to evaluate matchCondition '${c.name}': ${why}`);
    }
    if (!r.value) return {};
  }
  for (const v of (spec.variables as NamedExpression[] | undefined) ?? []) {
    const r = run(v.expression);
    if (r.ok) variables.set(v.name, r.value as CelInput);
    else failedVariables.set(v.name, r.error);
  }
  for (const v of (spec.validations as Validation[] | undefined) ?? []) {
    const r = run(v.expression);
    if (!r.ok || typeof r.value !== 'boolean') {
      if (!fail) continue;
      const why = r.ok ? 'did not evaluate to a bool' : r.error;
      return decide(`expression '${v.expression}' resulted in error: ${why}`);
    }
    if (r.value) continue;
    let message = str(v.message) || `failed expression: ${v.expression.trim()}`;
    if (v.messageExpression) {
      const m = run(v.messageExpression);
      if (m.ok && typeof m.value === 'string' && m.value.trim() !== '' && !m.value.includes('\n'))
        message = m.value;
    }
    return decide(message, str(v.reason) || 'Invalid');
  }
  return {};
}

/** Each policy with each of its bindings, in the order they are evaluated: by policy, then binding name. */
export function policyPairs(policies: KObject[], bindings: KObject[]): [KObject, KObject][] {
  const byName = (x: KObject, y: KObject) =>
    String(x.metadata.name).localeCompare(String(y.metadata.name));
  const pairs: [KObject, KObject][] = [];
  for (const policy of [...policies].sort(byName)) {
    const mine = bindings
      .filter(
        (b) => (b.spec as Record<string, unknown> | undefined)?.policyName === policy.metadata.name,
      )
      .sort(byName);
    for (const binding of mine) pairs.push([policy, binding]);
  }
  return pairs;
}

/** Every binding of every policy (as policyPairs orders them): the first denial and all warnings. */
export function admitPairs(pairs: [KObject, KObject][], a: AdmissionAttributes): AdmissionResult {
  const warnings: string[] = [];
  for (const [policy, binding] of pairs) {
    const out = evaluatePolicy(policy, binding, a);
    if (out.warning) warnings.push(out.warning);
    if (out.denial) return { denial: out.denial, warnings };
  }
  return { warnings };
}

const CODES: Record<string, number> = {
  Unauthorized: 401,
  Forbidden: 403,
  Invalid: 422,
  RequestEntityTooLarge: 413,
};

export const reasonCode = (reason: string): number => CODES[reason] ?? 422;

/** kube-apiserver's wording of a denial (after `<resource> "<name>" is forbidden: `). */
export const denialMessage = (d: Denial): string =>
  `ValidatingAdmissionPolicy '${d.policy}' with binding '${d.binding}' denied request: ${d.message}`;
