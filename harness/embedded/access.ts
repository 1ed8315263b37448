// The product's access on a local API server, exactly as manifests/ grants
// it: the CRDs, ServiceAccounts, Roles, ClusterRoles, their bindings and
// the ValidatingAdmissionPolicies of manifests/ applied (not the workloads
// themselves), and a token per component from the TokenRequest API — the
// fulfiller's for its service account, each sidecar's bound to its Node so
// the token carries the node name the isolation policy checks, as a pod's
// projected token does on Kubernetes >= 1.30. The embedded cluster runs
// every component with these; the sidecar and fulfiller tests do too
// (test/support/rbac.ts). The service account of each component is the one
// its workload in manifests/ runs as.
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { AdmissionDenial, AuthorizationRecord } from '../apiserver/auth/decisions.ts';
import type { SharedDispatchers } from '../../src/kube/shared-dispatcher.ts';
import { ManifestError, readInstall, type ManifestObject } from './manifests.ts';
import { httpJsonCalls } from './http-pod-api.ts';

/** What is applied, in this order (a binding after its role, a policy before its binding). */
export const ACCESS_KINDS = [
  'CustomResourceDefinition',
  'ServiceAccount',
  'ClusterRole',
  'Role',
  'ClusterRoleBinding',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
] as const;

/**
 * Lifetime of the embedded components' tokens: they are read once at start
 * (a pod's projected token is rotated by the kubelet; nothing rotates these),
 * so they outlive any `embedded --serve` session.
 */
export const COMPONENT_TOKEN_SECONDS = 365 * 24 * 3600;

export type Component = 'sidecar' | 'fulfiller';

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

/** The sub-command each component's workload runs (its container's first argument). */
const COMMANDS: Record<Component, string> = { sidecar: 'sidecar', fulfiller: 'fulfiller' };

/** Every object of ACCESS_KINDS, in apply order. */
export function accessObjects(objects: readonly ManifestObject[]): ManifestObject[] {
  return ACCESS_KINDS.flatMap((kind) => objects.filter((o) => o.kind === kind));
}

/** The service account the workload running `component` uses. */
export function serviceAccountOf(
  objects: readonly ManifestObject[],
  component: Component,
): ServiceAccountRef {
  interface PodTemplate {
    spec?: {
      template?: { spec?: { serviceAccountName?: string; containers?: { args?: string[] }[] } };
    };
  }
  const workloads = objects.filter((o) => {
    const containers = (o as PodTemplate).spec?.template?.spec?.containers ?? [];
    return containers.some((c) => c.args?.[0] === COMMANDS[component]);
  });
  if (workloads.length !== 1)
    throw new ManifestError(
      `manifests/: expected one workload running "${COMMANDS[component]}", found ${workloads.length}`,
    );
  const w = workloads[0] as ManifestObject & PodTemplate;
  const name = w.spec?.template?.spec?.serviceAccountName;
  if (!name) throw new ManifestError(`${w.kind} ${w.metadata.name}: no serviceAccountName`);
  return { namespace: w.metadata.namespace ?? 'default', name };
}

/** `system:serviceaccount:NS:NAME`. */
export const usernameOf = (sa: ServiceAccountRef): string =>
  `system:serviceaccount:${sa.namespace}:${sa.name}`;

/** A KubeConfig like `base` (same server, CA) whose user is `token`. */
export function kubeConfigWithToken(base: KubeConfig, token: string, user: string): KubeConfig {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new Error('the base kubeconfig has no current cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  return kc;
}

export interface ProductAccess {
  /** The objects applied. */
  objects: ManifestObject[];
  accounts: Record<Component, ServiceAccountRef>;
  /** A token of the fulfiller's service account, or of the sidecar's bound to `node` (which must exist). */
  token(component: 'fulfiller'): Promise<string>;
  token(component: 'sidecar', node: string): Promise<string>;
  /** A KubeConfig with that token, sharing `connections` when given. */
  kubeConfig(component: 'fulfiller'): Promise<KubeConfig>;
  kubeConfig(component: 'sidecar', node: string): Promise<KubeConfig>;
}

export interface GrantOptions {
  /** A kustomization directory (default manifests/). */
  dir?: string;
  /** The keep-alive pool the components' KubeConfigs join. */
  connections?: SharedDispatchers;
  expirationSeconds?: number;
}

/**
 * Applies the access objects of manifests/ with the admin `kc` (over the
 * API, as kubectl would) and hands out the components' tokens.
 */
export async function grantProductAccess(
  kc: KubeConfig,
  opts: GrantOptions = {},
): Promise<ProductAccess> {
  const all = readInstall(opts.dir);
  const objects = accessObjects(all);
  const accounts = {
    sidecar: serviceAccountOf(all, 'sidecar'),
    fulfiller: serviceAccountOf(all, 'fulfiller'),
  };
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const o of objects) await api.create(o as KubernetesObject);
  // A token a node, a thousand at set-up: plain HTTP (http-pod-api.ts), not
  // client-node's serializer and fetch.
  const calls = httpJsonCalls(kc);
  const expirationSeconds = opts.expirationSeconds ?? COMPONENT_TOKEN_SECONDS;

  const token = async (component: Component, node?: string): Promise<string> => {
    const sa = accounts[component];
    const path = `/api/v1/namespaces/${encodeURIComponent(sa.namespace)}/serviceaccounts/${encodeURIComponent(sa.name)}/token`;
    const tr = JSON.parse(
      await calls.call('POST', path, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: [],
          expirationSeconds,
          ...(node !== undefined
            ? { boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: node } }
            : {}),
        },
      }),
    ) as { status?: { token?: string } };
    const t = tr.status?.token;
    if (!t) throw new Error(`no token for ${usernameOf(sa)}`);
    return t;
  };
  const kubeConfig = async (component: Component, node?: string): Promise<KubeConfig> => {
    const user = component === 'sidecar' ? `sidecar-${node ?? ''}` : component;
    const own = kubeConfigWithToken(kc, await token(component, node), user);
    opts.connections?.attach(own);
    return own;
  };
  return {
    objects,
    accounts,
    token: token as ProductAccess['token'],
    kubeConfig: kubeConfig as ProductAccess['kubeConfig'],
  };
}

export interface ComponentAccess {
  user: string;
  /** Requests allowed. */
  allowed: number;
  /** Every request shape allowed, with its count (which grants were used). */
  used: AuthorizationRecord[];
  /** Every request shape RBAC refused (403), with its count. */
  refused: AuthorizationRecord[];
  /** Every write an admission policy denied. */
  denied: AdmissionDenial[];
}

/** What each component was allowed and refused, and the requests refused as unauthenticated. */
export type ProductAccessReport = Record<Component, ComponentAccess> & { unauthenticated: number };

/** What the API server (its authorizations()) decided for each component's service account. */
export function productAccessReport(
  authz: {
    decisions: readonly AuthorizationRecord[];
    admissionDenials: readonly AdmissionDenial[];
    unauthenticated: number;
  },
  accounts: Record<Component, ServiceAccountRef>,
): ProductAccessReport {
  const of = (c: Component): ComponentAccess => {
    const user = usernameOf(accounts[c]);
    const mine = authz.decisions.filter((r) => r.user === user);
    const used = mine.filter((r) => r.allowed);
    return {
      user,
      allowed: used.reduce((n, r) => n + r.count, 0),
      used,
      refused: mine.filter((r) => !r.allowed),
      denied: authz.admissionDenials.filter((d) => d.user === user),
    };
  };
  return {
    sidecar: of('sidecar'),
    fulfiller: of('fulfiller'),
    unauthenticated: authz.unauthenticated,
  };
}

/** Requests of the product its manifests did not allow (403 by RBAC or admission, 401). */
export function refusals(a: ProductAccessReport): string[] {
  const out: string[] = [];
  for (const c of ['sidecar', 'fulfiller'] as const) {
    for (const r of a[c].refused) {
      const what = r.path || `${r.verb} ${r.apiGroup || 'core'}/${r.resource}`;
      const where = r.namespace ? ` in ${r.namespace}` : '';
      out.push(`${c}: RBAC refused ${what}${where}${r.name ? ` (${r.name})` : ''} x${r.count}`);
    }
    for (const d of a[c].denied) out.push(`${c}: admission denied: ${d.message}`);
  }
  if (a.unauthenticated > 0) out.push(`${a.unauthenticated} request(s) unauthenticated (401)`);
  return out;
}
