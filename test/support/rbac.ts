// The one RBAC helper of the tests:
// - strictCluster(): the test cluster (test-cluster.ts, with its admin
//   clients and NNC helpers) as strict as a real cluster (RBAC, tokens) with
//   the access objects of manifests/ applied
//   (harness/embedded/access.ts, as the embedded cluster does), and the sidecar's
//   and the fulfiller's own tokens, as KubeConfigs or kubeconfig files for
//   processes; refusals() lists whatever the product was refused, and close()
//   fails when there was any. With RBAC_AUDIT_FILE set, close() appends the
//   authorization record to that file for the audit (rbac-audit.ts).
// - rulesOf/grants: the RBAC rules of a manifest file, flattened for exact
//   comparison; unusedGrants: the grants of a service account no request used.
import type { KubeConfig } from '@kubernetes/client-node';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { AuthorizationRecord } from '../../harness/apiserver/auth/decisions.ts';
import { ruleAllows, type PolicyRule } from '../../harness/apiserver/auth/rbac.ts';
import type { UserInfo } from '../../harness/apiserver/auth/user.ts';
import { writeKubeconfig } from '../../harness/apiserver/kubeconfig.ts';
import type { ApiServerOptions } from '../../harness/apiserver/server.ts';
import {
  grantProductAccess,
  productAccessReport,
  refusals,
  usernameOf,
  type Component,
  type ProductAccess,
  type ServiceAccountRef,
} from '../../harness/embedded/access.ts';
import type { ManifestObject } from '../../harness/embedded/manifests.ts';
import { startTestCluster, type TestCluster } from './test-cluster.ts';

/** A TestCluster whose admin (`kc`, `core`, `objects`) makes the test's own fixtures. */
export interface StrictCluster extends TestCluster {
  access: ProductAccess;
  /** As the sidecar of `node` (created when missing), its token bound to that Node. */
  sidecarKubeConfig(node: string): Promise<KubeConfig>;
  fulfillerKubeConfig(): Promise<KubeConfig>;
  /** A kubeconfig file with that token, for a process. */
  kubeconfigFile(component: 'fulfiller'): Promise<string>;
  kubeconfigFile(component: 'sidecar', node: string): Promise<string>;
  /** What the product was refused so far (403 by RBAC or admission, 401), one line each. */
  refusals(): string[];
  /** Closes everything; throws when the product was refused anything. */
  close(): Promise<void>;
}

export async function strictCluster(opts: ApiServerOptions = {}): Promise<StrictCluster> {
  // The CRDs come with manifests/ (grantProductAccess), as on a real cluster.
  const cluster = await startTestCluster({
    crds: 'none',
    ...opts,
    authorizationMode: 'RBAC',
    anonymous: false,
  });
  const { server, kc, core, dir } = cluster;
  let access: ProductAccess;
  try {
    access = await grantProductAccess(kc, { connections: cluster.connections });
  } catch (err) {
    await cluster.close();
    throw err;
  }
  const ensureNode = async (name: string): Promise<void> => {
    await core.readNode({ name }).catch(() => core.createNode({ body: { metadata: { name } } }));
  };
  const refused = (): string[] => {
    return refusals(productAccessReport(server.authorizations(), access.accounts));
  };
  let files = 0;
  return {
    ...cluster,
    access,
    async sidecarKubeConfig(node) {
      await ensureNode(node);
      return access.kubeConfig('sidecar', node);
    },
    fulfillerKubeConfig: () => access.kubeConfig('fulfiller'),
    kubeconfigFile: (async (component: Component, node?: string) => {
      if (component === 'sidecar') await ensureNode(node as string);
      const token =
        component === 'sidecar'
          ? await access.token('sidecar', node as string)
          : await access.token('fulfiller');
      const path = join(dir, `kubeconfig-${component}-${++files}`);
      writeKubeconfig(path, server.url, {
        token,
        ...(server.caPem ? { caPem: server.caPem } : {}),
      });
      return path;
    }) as StrictCluster['kubeconfigFile'],
    refusals: refused,
    async close() {
      const lines = refused();
      if (process.env.RBAC_AUDIT_FILE)
        appendFileSync(
          process.env.RBAC_AUDIT_FILE,
          `${JSON.stringify({ decisions: server.authorizations().decisions })}\n`,
        );
      await cluster.close();
      if (lines.length > 0)
        throw new Error(`the API server refused what the product needs:\n  ${lines.join('\n  ')}`);
    },
  };
}

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export function rulesOf(file: string): Rule[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as { rules?: Rule[] })
    .flatMap((doc) => doc.rules ?? []);
}

/** `group/resource[names]` → sorted verbs; core is "core". */
export function grants(rules: Rule[]): Record<string, string[]> {
  const out = new Map<string, string[]>();
  for (const rule of rules)
    for (const group of rule.apiGroups)
      for (const resource of rule.resources) {
        const names = rule.resourceNames ? `[${rule.resourceNames.join(',')}]` : '';
        const key = `${group || 'core'}/${resource}${names}`;
        out.set(key, [...(out.get(key) ?? []), ...rule.verbs].sort());
      }
  return Object.fromEntries(out);
}

/** The rules bound to `sa` by the objects' bindings, with where they apply ('' = everywhere). */
export function boundRules(
  objects: readonly ManifestObject[],
  sa: ServiceAccountRef,
): { rule: PolicyRule; namespace: string; role: string }[] {
  const out: { rule: PolicyRule; namespace: string; role: string }[] = [];
  for (const b of objects.filter(
    (o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding',
  )) {
    const bns = b.kind === 'RoleBinding' ? (b.metadata.namespace ?? '') : '';
    const subjects = (b.subjects ?? []) as { kind?: string; name?: string; namespace?: string }[];
    if (
      !subjects.some(
        (s) =>
          s.kind === 'ServiceAccount' &&
          s.name === sa.name &&
          (s.namespace || bns) === sa.namespace,
      )
    )
      continue;
    const ref = b.roleRef as { kind: string; name: string };
    const role = objects.find(
      (o) =>
        o.kind === ref.kind &&
        o.metadata.name === ref.name &&
        (ref.kind === 'ClusterRole' || o.metadata.namespace === bns),
    );
    for (const rule of (role?.rules ?? []) as PolicyRule[])
      out.push({ rule, namespace: bns, role: `${ref.kind}/${ref.name}` });
  }
  return out;
}

/**
 * Every verb on every resource the objects grant `sa` that no allowed
 * request of its user in `records` needed: `verb group/resource[names] (Role/x)`.
 */
export function unusedGrants(
  objects: readonly ManifestObject[],
  sa: ServiceAccountRef,
  records: readonly AuthorizationRecord[],
): string[] {
  const user = usernameOf(sa);
  const used = records.filter((r) => r.user === user && r.allowed && r.path === '');
  const out: string[] = [];
  for (const { rule, namespace, role } of boundRules(objects, sa))
    for (const verb of rule.verbs ?? [])
      for (const group of rule.apiGroups ?? [])
        for (const resource of rule.resources ?? []) {
          const one: PolicyRule = {
            ...rule,
            verbs: [verb],
            apiGroups: [group],
            resources: [resource],
          };
          const hit = used.some((r) => {
            if (namespace !== '' && r.namespace !== namespace) return false;
            const [res, sub = ''] = r.resource.split('/') as [string, string?];
            return ruleAllows(
              {
                user: { username: user, uid: '', groups: [], extra: {} } as UserInfo,
                verb: r.verb,
                resourceRequest: true,
                path: '',
                apiGroup: r.apiGroup,
                resource: res,
                subresource: sub,
                namespace: r.namespace,
                name: r.name,
              },
              one,
            );
          });
          const names = rule.resourceNames ? `[${rule.resourceNames.join(',')}]` : '';
          if (!hit) out.push(`${verb} ${group || 'core'}/${resource}${names} (${role})`);
        }
  return out;
}
