// Who may do what on the local API server: authentication (admin token,
// static token file, service-account tokens, anonymous), authorization
// (AlwaysAllow or RBAC over the stored Roles and bindings, indexed by
// subject and rebuilt when one changes) and validating admission
// (ValidatingAdmissionPolicies), wired to the object store. Every decision
// on a user outside system:masters is counted (decisions), every refusal
// logged.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  admitPairs,
  denialMessage,
  policyPairs,
  reasonCode,
  type AdmissionAttributes,
} from './admission/policy.ts';
import { Authenticator } from './auth/authenticate.ts';
import { authorize, forbidden, unauthorized, type AuthorizationMode } from './auth/authorize.ts';
import { AuthorizationDecisions } from './auth/decisions.ts';
import { DEFAULT_FEATURE_GATES, type FeatureGates } from './auth/feature-gates.ts';
import type { RequestAttributes } from './auth/rbac.ts';
import { RbacIndex } from './auth/rbac-index.ts';
import { ServiceAccountTokens } from './auth/service-account-tokens.ts';
import { parseTokenFile } from './auth/token-file.ts';
import { tokenRequest } from './auth/token-request.ts';
import type { UserInfo } from './auth/user.ts';
import { ApiError, qualified } from './errors.ts';
import { silentLogger, type Logger } from '../../src/log/logger.ts';
import type { Json, KObject } from '../../src/kube/json-object.ts';
import type { Route } from './router.ts';
import type { ObjectStore } from './store.ts';

export interface AccessOptions {
  /** --token-auth-file: CSV token,user,uid,"group1,group2". */
  tokenAuthFile?: string;
  authorizationMode?: AuthorizationMode;
  /** Anonymous requests (no credentials) allowed; default: only without a token file. */
  anonymous?: boolean;
  now?: () => Date;
  /** Refused requests are logged here (warn). */
  logger?: Logger;
  /** --feature-gates (DEFAULT_FEATURE_GATES when absent). */
  featureGates?: FeatureGates;
}

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const ADMISSION_GROUP = 'admissionregistration.k8s.io';

const KIND_KEYS = { ServiceAccount: 'serviceaccounts', Pod: 'pods', Node: 'nodes' } as const;

/** Lowercase HTTP method as Kubernetes names non-resource verbs. */
const nonResourceVerb = (method: string): string =>
  method === 'HEAD' ? 'get' : method.toLowerCase();

/** The single metadata.name=X of a field selector (what RBAC sees as the name of a list or watch). */
export function nameFromFieldSelector(fieldSelector: string | null): string {
  if (!fieldSelector) return '';
  const parts = fieldSelector.split(',').filter((p) => p !== '');
  const m = parts.length === 1 ? /^metadata\.name==?(.*)$/.exec(parts[0] as string) : null;
  return m ? (m[1] as string) : '';
}

/** Request attributes as kube-apiserver's RequestInfo derives them from the path. */
export function requestAttributes(
  user: UserInfo,
  method: string,
  path: string,
  route: Route,
  verb: string | undefined,
  q: URLSearchParams,
): RequestAttributes {
  if (route.kind !== 'resource')
    return {
      user,
      verb: nonResourceVerb(method),
      resourceRequest: false,
      path,
      apiGroup: '',
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
    };
  let name = route.name ?? '';
  if ((verb === 'list' || verb === 'watch') && name === '')
    name = nameFromFieldSelector(q.get('fieldSelector'));
  let namespace = route.namespace ?? '';
  if (route.group === '' && route.plural === 'namespaces' && name !== '') namespace = name;
  return {
    user,
    verb: verb ?? method.toLowerCase(),
    resourceRequest: true,
    path,
    apiGroup: route.group,
    resource: route.plural,
    subresource: route.subresource ?? '',
    namespace,
    name,
  };
}

export class AccessControl {
  readonly adminToken = randomBytes(32).toString('base64url');
  readonly mode: AuthorizationMode;
  readonly anonymous: boolean;
  readonly tokens: ServiceAccountTokens;
  readonly decisions = new AuthorizationDecisions();
  readonly gates: FeatureGates;
  /** Requests refused with 401 so far. */
  unauthenticated = 0;
  private readonly store: ObjectStore;
  private readonly authn: Authenticator;
  private readonly rbac: RbacIndex;
  private readonly logger: Logger;
  /** The admission policies paired with their bindings, until either changes. */
  private policies: [KObject, KObject][] | undefined;

  constructor(store: ObjectStore, opts: AccessOptions = {}) {
    this.store = store;
    this.mode = opts.authorizationMode ?? 'AlwaysAllow';
    const staticTokens =
      opts.tokenAuthFile !== undefined
        ? parseTokenFile(readFileSync(opts.tokenAuthFile, 'utf8'))
        : undefined;
    this.anonymous = opts.anonymous ?? staticTokens === undefined;
    this.gates = opts.featureGates ?? DEFAULT_FEATURE_GATES;
    this.tokens = new ServiceAccountTokens((kind, ns, name) => {
      const m = this.getObject(kind, ns, name)?.metadata;
      if (!m) return undefined;
      return {
        uid: String(m.uid ?? ''),
        ...(typeof m.deletionTimestamp === 'string'
          ? { deletionTimestamp: m.deletionTimestamp }
          : {}),
      };
    }, opts.now);
    this.authn = new Authenticator({
      adminToken: this.adminToken,
      serviceAccountTokens: this.tokens,
      anonymous: this.anonymous,
      ...(staticTokens ? { staticTokens } : {}),
    });
    this.logger = opts.logger ?? silentLogger();
    this.rbac = new RbacIndex({
      clusterRole: (name) => store.get(`${RBAC_GROUP}/clusterroles`, undefined, name),
      role: (ns, name) => store.get(`${RBAC_GROUP}/roles`, ns, name),
      clusterRoleBindings: () => store.list(`${RBAC_GROUP}/clusterrolebindings`),
      roleBindings: (ns) => store.list(`${RBAC_GROUP}/rolebindings`, ns),
    });
    store.subscribe((ev) => {
      if (ev.resource.startsWith(`${RBAC_GROUP}/`)) this.rbac.invalidate();
      if (ev.resource.startsWith(`${ADMISSION_GROUP}/`)) this.policies = undefined;
    });
  }

  getObject(
    kind: 'ServiceAccount' | 'Pod' | 'Node',
    namespace: string | undefined,
    name: string,
  ): KObject | undefined {
    return this.store.get(KIND_KEYS[kind], kind === 'Node' ? undefined : namespace, name);
  }

  /** The request's user; 401 for a bad token, or no credentials without --anonymous. */
  authenticate(authorization: string | undefined): UserInfo {
    const r = this.authn.check(authorization);
    if ('user' in r) return r.user;
    this.unauthenticated++;
    this.logger.warn('request unauthorized', {
      credentials: authorization === undefined ? 'none' : 'a token no authenticator accepts',
      reason: r.error,
    });
    throw unauthorized();
  }

  /** Throws the 403 kube-apiserver sends when the request is not allowed. */
  authorize(a: RequestAttributes): void {
    const d = authorize(this.mode, a, this.rbac);
    this.decisions.record(a, d.allowed);
    if (d.allowed) return;
    const err = forbidden(a, d.reason);
    this.logger.warn('request forbidden', { user: a.user.username, message: err.message });
    throw err;
  }

  /** Runs the ValidatingAdmissionPolicies; returns warnings, throws the denial. */
  admit(a: AdmissionAttributes): string[] {
    this.policies ??= policyPairs(
      this.store.list(`${ADMISSION_GROUP}/validatingadmissionpolicies`),
      this.store.list(`${ADMISSION_GROUP}/validatingadmissionpolicybindings`),
    );
    if (this.policies.length === 0) return [];
    const out = admitPairs(this.policies, a);
    if (out.denial) {
      const message = denialMessage(out.denial);
      const what = qualified(a.group, a.resource);
      this.decisions.denied({
        user: a.user.username,
        operation: a.operation,
        apiGroup: a.group,
        resource: a.subresource ? `${a.resource}/${a.subresource}` : a.resource,
        namespace: a.namespace,
        name: a.name,
        message,
      });
      this.logger.warn('request denied by admission', { user: a.user.username, message });
      throw new ApiError(
        reasonCode(out.denial.reason),
        out.denial.reason,
        a.name
          ? `${what} "${a.name}" is forbidden: ${message}`
          : `${what} is forbidden: ${message}`,
        {
          ...(a.name ? { name: a.name } : {}),
          group: a.group,
          kind: a.resource,
          causes: [{ message }],
        },
      );
    }
    return out.warnings;
  }

  tokenRequest(namespace: string, saName: string, body: Json): KObject {
    return tokenRequest(
      this.tokens,
      (k, ns, n) => this.getObject(k, ns, n),
      namespace,
      saName,
      body,
      this.gates,
    );
  }
}
