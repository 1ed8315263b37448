// RBAC decisions without a scan of every binding per request: the bindings
// are indexed by subject (user name, group), and the rules a user gets are
// resolved once per user (cluster-wide, and per namespace when asked) and
// kept until an RBAC object changes (invalidate()). A thousand sidecars
// share one service account, so one entry serves them all. Decides exactly
// as rbacAuthorize (rbac.ts) does, denial reasons included; a property test
// holds the two together.
import type { KObject } from '../../../src/kube/json-object.ts';
import {
  ruleAllows,
  type Decision,
  type PolicyRule,
  type RbacSource,
  type RequestAttributes,
} from './rbac.ts';
import { serviceAccountUsername, type UserInfo } from './user.ts';

interface RoleRef {
  kind: string;
  name: string;
  /** The RoleBinding's namespace; '' for a ClusterRoleBinding. */
  namespace: string;
}

/** Rules from some bindings, and the roles they named that do not exist. */
interface Resolved {
  rules: PolicyRule[];
  errors: string[];
}

interface UserEntry {
  cluster: Resolved;
  namespaces: Map<string, Resolved>;
}

/** Users whose resolved rules are kept at most (cleared beyond, rebuilt on demand). */
const MAX_USERS = 10_000;

const subjectsOf = (b: KObject): { kind?: string; name?: string; namespace?: string }[] =>
  Array.isArray(b.subjects) ? (b.subjects as { kind?: string }[]) : [];
const rulesOf = (role: KObject | undefined): PolicyRule[] =>
  role && Array.isArray(role.rules) ? (role.rules as PolicyRule[]) : [];

/** The index key of a binding subject: `u:NAME` for users and service accounts, `g:NAME` for groups. */
export function subjectKey(
  s: { kind?: string; name?: string; namespace?: string },
  bindingNamespace: string,
): string | undefined {
  if (!s.name) return undefined;
  if (s.kind === 'User') return `u:${s.name}`;
  if (s.kind === 'Group') return `g:${s.name}`;
  if (s.kind === 'ServiceAccount') {
    const ns = s.namespace || bindingNamespace;
    return ns ? `u:${serviceAccountUsername(ns, s.name)}` : undefined;
  }
  return undefined;
}

export class RbacIndex {
  private readonly src: RbacSource;
  /** Cluster role bindings by subject key, in the order rbacAuthorize visits them. */
  private clusterBySubject: Map<string, RoleRef[]> | undefined;
  /** Role bindings by namespace, then subject key. */
  private readonly namespaceBySubject = new Map<string, Map<string, RoleRef[]>>();
  private readonly users = new Map<string, UserEntry>();

  constructor(src: RbacSource) {
    this.src = src;
  }

  /** Forgets everything; call on any change of a Role, ClusterRole or binding. */
  invalidate(): void {
    this.clusterBySubject = undefined;
    this.namespaceBySubject.clear();
    this.users.clear();
  }

  decide(a: RequestAttributes): Decision {
    const entry = this.entry(a.user);
    if (entry.cluster.rules.some((r) => ruleAllows(a, r))) return { allowed: true, reason: '' };
    const errors = [...entry.cluster.errors];
    if (a.resourceRequest && a.namespace !== '') {
      let inNs = entry.namespaces.get(a.namespace);
      if (!inNs) {
        inNs = this.resolve(a.user, this.roleBindingIndex(a.namespace));
        entry.namespaces.set(a.namespace, inNs);
      }
      if (inNs.rules.some((r) => ruleAllows(a, r))) return { allowed: true, reason: '' };
      errors.push(...inNs.errors);
    }
    const reason =
      errors.length === 0
        ? ''
        : `RBAC: ${errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`}`;
    return { allowed: false, reason };
  }

  private entry(user: UserInfo): UserEntry {
    const key = `${user.username}\u0000${user.groups.join('\u0000')}`;
    let e = this.users.get(key);
    if (!e) {
      if (this.users.size >= MAX_USERS) this.users.clear();
      e = {
        cluster: this.resolve(user, this.clusterBindingIndex()),
        namespaces: new Map(),
      };
      this.users.set(key, e);
    }
    return e;
  }

  /** The rules (and missing roles) of the bindings naming `user`, in binding order. */
  private resolve(user: UserInfo, index: Map<string, RoleRef[]>): Resolved {
    const refs = new Set<RoleRef>();
    for (const key of [`u:${user.username}`, ...user.groups.map((g) => `g:${g}`)])
      for (const ref of index.get(key) ?? []) refs.add(ref);
    // The order of the bindings, not of the subjects (the denial lists missing roles so).
    const ordered = [...refs].sort((x, y) => order.get(x)! - order.get(y)!);
    const out: Resolved = { rules: [], errors: [] };
    for (const ref of ordered) {
      const role =
        ref.kind === 'ClusterRole'
          ? this.src.clusterRole(ref.name)
          : ref.kind === 'Role' && ref.namespace !== ''
            ? this.src.role(ref.namespace, ref.name)
            : undefined;
      if (!role) {
        const what = ref.kind === 'Role' ? 'role' : 'clusterrole';
        out.errors.push(`${what}.rbac.authorization.k8s.io "${ref.name}" not found`);
      } else out.rules.push(...rulesOf(role));
    }
    return out;
  }

  private clusterBindingIndex(): Map<string, RoleRef[]> {
    this.clusterBySubject ??= indexBindings(
      // A ClusterRoleBinding binds only ClusterRoles.
      this.src.clusterRoleBindings().filter((b) => roleRefOf(b).kind === 'ClusterRole'),
      '',
    );
    return this.clusterBySubject;
  }

  private roleBindingIndex(namespace: string): Map<string, RoleRef[]> {
    let idx = this.namespaceBySubject.get(namespace);
    if (!idx) {
      idx = indexBindings(this.src.roleBindings(namespace), namespace);
      this.namespaceBySubject.set(namespace, idx);
    }
    return idx;
  }
}

/** Visit order of each role reference (its binding's place in the list). */
const order = new WeakMap<RoleRef, number>();

function roleRefOf(b: KObject): { kind: string; name: string } {
  const r = (b.roleRef as { kind?: string; name?: string } | undefined) ?? {};
  return { kind: r.kind ?? '', name: r.name ?? '' };
}

function indexBindings(bindings: KObject[], namespace: string): Map<string, RoleRef[]> {
  const index = new Map<string, RoleRef[]>();
  bindings.forEach((b, i) => {
    const ref: RoleRef = { ...roleRefOf(b), namespace };
    order.set(ref, i);
    for (const s of subjectsOf(b)) {
      const key = subjectKey(s, namespace);
      if (key === undefined) continue;
      const list = index.get(key);
      if (!list) index.set(key, [ref]);
      else if (!list.includes(ref)) list.push(ref);
    }
  });
  return index;
}
