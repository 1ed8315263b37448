// RBAC as Kubernetes evaluates it (pure): a request is allowed when some
// rule of a role bound to the user allows it. ClusterRoleBindings apply
// everywhere; RoleBindings only in their namespace, to a Role there or a
// ClusterRole; non-resource URLs only through ClusterRoleBindings. Rules
// match verbs, apiGroups, resources ("*", "res/sub", "*/sub"), resourceNames
// and nonResourceURLs ("*", "/path", "/prefix/*"). A binding to a role that
// does not exist is the denial's reason, as kube-apiserver words it.
import type { KObject } from '../../../src/kube/json-object.ts';
import { serviceAccountUsername, type UserInfo } from './user.ts';

export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  /** Request path, for non-resource requests. */
  path: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

/** Where RBAC objects come from (the store). */
export interface RbacSource {
  clusterRole(name: string): KObject | undefined;
  role(namespace: string, name: string): KObject | undefined;
  clusterRoleBindings(): KObject[];
  roleBindings(namespace: string): KObject[];
}

export interface Decision {
  allowed: boolean;
  reason: string;
}

const has = (list: string[] | undefined, v: string): boolean =>
  Array.isArray(list) && (list.includes('*') || list.includes(v));

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return has(rule.verbs, verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return has(rule.apiGroups, group);
}

export function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource && r === `*/${subresource}`) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (name !== '' && names.includes(name));
}

export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

export function ruleAllows(a: RequestAttributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, a.verb)) return false;
  if (!a.resourceRequest) return nonResourceURLMatches(rule, a.path);
  return (
    apiGroupMatches(rule, a.apiGroup) &&
    resourceMatches(rule, a.resource, a.subresource) &&
    resourceNameMatches(rule, a.name)
  );
}

export function subjectMatches(s: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return s.name === user.username;
    case 'Group':
      return s.name !== undefined && user.groups.includes(s.name);
    case 'ServiceAccount': {
      const ns = s.namespace || bindingNamespace;
      return ns !== '' && !!s.name && user.username === serviceAccountUsername(ns, s.name);
    }
    default:
      return false;
  }
}

const subjectsOf = (b: KObject): Subject[] =>
  Array.isArray(b.subjects) ? (b.subjects as Subject[]) : [];
const roleRefOf = (b: KObject): { kind?: string; name?: string } =>
  (b.roleRef as { kind?: string; name?: string } | undefined) ?? {};
const rulesOf = (role: KObject): PolicyRule[] =>
  Array.isArray(role.rules) ? (role.rules as PolicyRule[]) : [];

export function rbacAuthorize(a: RequestAttributes, src: RbacSource): Decision {
  const errors: string[] = [];
  const check = (roleKind: string | undefined, roleName: string | undefined, ns: string) => {
    const name = roleName ?? '';
    const role =
      roleKind === 'ClusterRole'
        ? src.clusterRole(name)
        : roleKind === 'Role' && ns !== ''
          ? src.role(ns, name)
          : undefined;
    if (!role) {
      const what = roleKind === 'Role' ? 'role' : 'clusterrole';
      errors.push(`${what}.rbac.authorization.k8s.io "${name}" not found`);
      return false;
    }
    return rulesOf(role).some((rule) => ruleAllows(a, rule));
  };
  for (const b of src.clusterRoleBindings()) {
    if (!subjectsOf(b).some((s) => subjectMatches(s, a.user, ''))) continue;
    const ref = roleRefOf(b);
    if (ref.kind !== 'ClusterRole') continue;
    if (check(ref.kind, ref.name, '')) return { allowed: true, reason: '' };
  }
  if (a.resourceRequest && a.namespace !== '') {
    for (const b of src.roleBindings(a.namespace)) {
      if (!subjectsOf(b).some((s) => subjectMatches(s, a.user, a.namespace))) continue;
      const ref = roleRefOf(b);
      if (check(ref.kind, ref.name, a.namespace)) return { allowed: true, reason: '' };
    }
  }
  const reason =
    errors.length === 0
      ? ''
      : `RBAC: ${errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`}`;
  return { allowed: false, reason };
}

/** kube-apiserver's message for a denied request (without the "... is forbidden: " head). */
export function forbiddenMessage(a: RequestAttributes): string {
  const user = a.user.username;
  if (!a.resourceRequest) return `User "${user}" cannot ${a.verb} path "${a.path}"`;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const where = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  return `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${where}`;
}
