// Discovery documents (/version, /api, /api/v1, /apis, /apis/GROUP[/VERSION])
// in their legacy (unaggregated) form: kubectl asks for aggregated discovery
// first but accepts plain APIGroupList/APIResourceList with content type
// application/json. Also a minimal OpenAPI v3 index and per-group-version
// documents: enough for kubectl to see that every resource accepts the
// server-side `fieldValidation` parameter, so it skips client-side schema
// validation (which would need the full protobuf OpenAPI v2 document).
import type { JsonObject } from '../../src/kube/json-object.ts';
import { apiVersionOf, type ResourceCatalog, type ResourceInfo } from './resources.ts';

export const KUBE_VERSION = { major: '1', minor: '33', gitVersion: 'v1.33.0-pool-monitor' };

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export function versionInfo(): JsonObject {
  return {
    ...KUBE_VERSION,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2025-01-01T00:00:00Z',
    goVersion: 'go1.24.0',
    compiler: 'gc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}

export function apiVersions(serverAddress: string): JsonObject {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupEntry(group: string, versions: string[]): JsonObject {
  const vs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions: vs, preferredVersion: vs[0] ?? {} };
}

export function apiGroupList(catalog: ResourceCatalog): JsonObject {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: catalog
      .groups()
      .filter((g) => g.group !== '')
      .map((g) => groupEntry(g.group, g.versions)),
  };
}

export function apiGroup(catalog: ResourceCatalog, group: string): JsonObject | undefined {
  const g = catalog.groups().find((x) => x.group === group && group !== '');
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(g.group, g.versions) } : undefined;
}

function resourcesAt(catalog: ResourceCatalog, group: string, version: string): ResourceInfo[] {
  return catalog.all().filter((r) => r.group === group && r.versions.includes(version));
}

export function apiResourceList(
  catalog: ResourceCatalog,
  group: string,
  version: string,
): JsonObject | undefined {
  const rs = resourcesAt(catalog, group, version);
  if (rs.length === 0) return undefined;
  const resources: JsonObject[] = [];
  for (const r of rs) {
    const entry: JsonObject = {
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: VERBS,
    };
    if (r.shortNames.length) entry.shortNames = r.shortNames;
    if (r.categories.length) entry.categories = r.categories;
    resources.push(entry);
    if (r.statusSubresource)
      resources.push({
        name: `${r.plural}/status`,
        singularName: '',
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ['get', 'patch', 'update'],
      });
    if (r.group === '' && r.plural === 'serviceaccounts')
      resources.push({
        name: 'serviceaccounts/token',
        singularName: '',
        namespaced: true,
        group: 'authentication.k8s.io',
        version: 'v1',
        kind: 'TokenRequest',
        verbs: ['create'],
      });
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf(group, version),
    resources,
  };
}

/** The key of a group-version in the OpenAPI v3 index: `api/v1`, `apis/acn.azure.com/v1alpha`. */
export function openApiPathKey(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

export function openApiIndex(catalog: ResourceCatalog, hash: string): JsonObject {
  const paths: JsonObject = {};
  for (const g of catalog.groups())
    for (const v of g.versions) {
      const key = openApiPathKey(g.group, v);
      paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
    }
  return { paths };
}

const PARAM_FIELD_VALIDATION = {
  name: 'fieldValidation',
  in: 'query',
  description: 'How the server treats unknown or duplicate fields: Ignore, Warn or Strict.',
  schema: { type: 'string', uniqueItems: true },
};

export function openApiGroupVersion(
  catalog: ResourceCatalog,
  group: string,
  version: string,
): JsonObject | undefined {
  const rs = resourcesAt(catalog, group, version);
  if (rs.length === 0) return undefined;
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const paths: JsonObject = {};
  for (const r of rs) {
    const gvk = { group: r.group, version, kind: r.kind };
    const op = (action: string): JsonObject => ({
      operationId: `${action}${r.kind}`,
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
      parameters: [PARAM_FIELD_VALIDATION],
      responses: { '200': { description: 'OK' } },
    });
    const item = `${base}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}/{name}`;
    paths[item] = { get: op('get'), put: op('put'), patch: op('patch'), delete: op('delete') };
    paths[`${base}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}`] = {
      post: op('post'),
      get: op('list'),
    };
    if (r.statusSubresource)
      paths[`${item}/status`] = { get: op('get'), put: op('put'), patch: op('patch') };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: KUBE_VERSION.gitVersion },
    paths,
    components: { schemas: {} },
  };
}
