// The catalogue of served resources: the built-in ones this server knows and
// the ones every stored CustomResourceDefinition registers. Pure data; the
// server rebuilds the CRD part whenever a CRD changes.
import { isObject, type JsonObject, type KObject } from '../../src/kube/json-object.ts';

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
  format?: string;
  /** Built-ins only: the cell computed from the object, as kubectl's printers do (jsonPath is then informative). */
  value?: (obj: KObject) => string;
}

/** A Node's STATUS as `kubectl get nodes` prints it: Ready, NotReady or Unknown, plus SchedulingDisabled. */
export function nodeStatus(node: KObject): string {
  const status = isObject(node.status) ? node.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  const ready = conditions.find((c) => isObject(c) && c.type === 'Ready');
  const state =
    isObject(ready) && ready.status === 'True'
      ? 'Ready'
      : isObject(ready) && ready.status === 'False'
        ? 'NotReady'
        : 'Unknown';
  const spec = isObject(node.spec) ? node.spec : {};
  return spec.unschedulable === true ? `${state},SchedulingDisabled` : state;
}

/** A Node's ROLES: the names of its node-role.kubernetes.io/NAME labels, else <none>. */
export function nodeRoles(node: KObject): string {
  const labels = isObject(node.metadata.labels) ? node.metadata.labels : {};
  const prefix = 'node-role.kubernetes.io/';
  const roles = Object.keys(labels)
    .filter((k) => k.startsWith(prefix) && k.length > prefix.length)
    .map((k) => k.slice(prefix.length))
    .sort();
  return roles.length > 0 ? roles.join(',') : '<none>';
}

export interface ResourceInfo {
  group: string; // '' for core
  version: string; // the version objects are stored and served at
  versions: string[]; // every served version (CRDs may serve several)
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Whether `/status` is a subresource: then main writes keep status, status writes keep the rest. */
  statusSubresource: boolean;
  /** Whether spec changes bump metadata.generation (resources with a status subresource). */
  generation: boolean;
  printerColumns: PrinterColumn[];
  /** CRD structural schema per version, for validation and pruning; absent for built-ins. */
  schema?: JsonObject;
  /** Strategic merge patch is allowed (built-in types only, as upstream). */
  strategicMerge: boolean;
  /** The CRD that registered it. */
  crdName?: string;
}

/** The resource's key in the store: version-independent, like etcd's. */
export function resourceKey(r: { group: string; plural: string }): string {
  return r.group ? `${r.group}/${r.plural}` : r.plural;
}

export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

function builtin(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
  extra: Partial<ResourceInfo> = {},
): ResourceInfo {
  return {
    group,
    version,
    versions: [version],
    plural,
    singular: kind.toLowerCase(),
    kind,
    listKind: `${kind}List`,
    namespaced,
    shortNames: [],
    categories: [],
    statusSubresource: false,
    generation: false,
    printerColumns: [],
    strategicMerge: group !== 'apiextensions.k8s.io',
    ...extra,
  };
}

export const BUILTIN_RESOURCES: readonly ResourceInfo[] = [
  builtin('', 'v1', 'namespaces', 'Namespace', false, {
    shortNames: ['ns'],
    statusSubresource: true,
    printerColumns: [{ name: 'Status', type: 'string', jsonPath: '.status.phase' }],
  }),
  builtin('', 'v1', 'nodes', 'Node', false, {
    shortNames: ['no'],
    statusSubresource: true,
    // NAME STATUS ROLES AGE VERSION, and INTERNAL-IP with -o wide, as upstream.
    printerColumns: [
      {
        name: 'Status',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
        value: nodeStatus,
      },
      { name: 'Roles', type: 'string', jsonPath: '.metadata.labels', value: nodeRoles },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      { name: 'Version', type: 'string', jsonPath: '.status.nodeInfo.kubeletVersion' },
      {
        name: 'Internal-IP',
        type: 'string',
        jsonPath: '.status.addresses[?(@.type=="InternalIP")].address',
        priority: 1,
      },
    ],
  }),
  builtin('', 'v1', 'pods', 'Pod', true, {
    shortNames: ['po'],
    categories: ['all'],
    statusSubresource: true,
    printerColumns: [
      { name: 'Status', type: 'string', jsonPath: '.status.phase' },
      { name: 'IP', type: 'string', jsonPath: '.status.podIP', priority: 1 },
      { name: 'Node', type: 'string', jsonPath: '.spec.nodeName', priority: 1 },
    ],
  }),
  builtin('', 'v1', 'events', 'Event', true, {
    shortNames: ['ev'],
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.type' },
      { name: 'Reason', type: 'string', jsonPath: '.reason' },
      { name: 'Object', type: 'string', jsonPath: '.involvedObject.name' },
      { name: 'Message', type: 'string', jsonPath: '.message' },
    ],
  }),
  builtin('', 'v1', 'serviceaccounts', 'ServiceAccount', true, { shortNames: ['sa'] }),
  // Served so the product's own manifests (DaemonSet, Deployment, RBAC) can be applied and
  // inspected; stored as written, with no controller acting on them.
  builtin('apps', 'v1', 'daemonsets', 'DaemonSet', true, {
    shortNames: ['ds'],
    categories: ['all'],
    statusSubresource: true,
    generation: true,
    printerColumns: [
      { name: 'Desired', type: 'integer', jsonPath: '.status.desiredNumberScheduled' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.numberReady' },
    ],
  }),
  // The fulfiller's Deployment, likewise stored as written.
  builtin('apps', 'v1', 'deployments', 'Deployment', true, {
    shortNames: ['deploy'],
    categories: ['all'],
    statusSubresource: true,
    generation: true,
    printerColumns: [
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
      { name: 'Up-to-date', type: 'integer', jsonPath: '.status.updatedReplicas' },
      { name: 'Available', type: 'integer', jsonPath: '.status.availableReplicas' },
    ],
  }),
  builtin('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  builtin('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  builtin('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
  builtin('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
  builtin(
    'admissionregistration.k8s.io',
    'v1',
    'validatingadmissionpolicies',
    'ValidatingAdmissionPolicy',
    false,
    { categories: ['api-extensions'], statusSubresource: true, generation: true },
  ),
  builtin(
    'admissionregistration.k8s.io',
    'v1',
    'validatingadmissionpolicybindings',
    'ValidatingAdmissionPolicyBinding',
    false,
    { categories: ['api-extensions'], generation: true },
  ),
  builtin('authentication.k8s.io', 'v1', 'selfsubjectreviews', 'SelfSubjectReview', false),
  builtin('coordination.k8s.io', 'v1', 'leases', 'Lease', true, {
    printerColumns: [{ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity' }],
  }),
  builtin(
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
    false,
    {
      shortNames: ['crd', 'crds'],
      categories: ['api-extensions'],
      statusSubresource: true,
      generation: true,
      printerColumns: [
        { name: 'Created At', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ),
];

/** The first served version of a CRD that is marked storage (else the first served). */
function storageVersion(versions: JsonObject[]): JsonObject | undefined {
  return versions.find((v) => v.storage === true) ?? versions[0];
}

/** Reads a CRD object into the resource it registers; throws on a malformed one. */
export function resourceFromCrd(crd: KObject): ResourceInfo {
  const spec = crd.spec;
  if (!isObject(spec)) throw new Error('spec is required');
  const names = spec.names;
  if (!isObject(names)) throw new Error('spec.names is required');
  const group = spec.group;
  const plural = names.plural;
  const kind = names.kind;
  if (typeof group !== 'string' || !group) throw new Error('spec.group is required');
  if (typeof plural !== 'string' || !plural) throw new Error('spec.names.plural is required');
  if (typeof kind !== 'string' || !kind) throw new Error('spec.names.kind is required');
  if (crd.metadata.name !== `${plural}.${group}`)
    throw new Error(
      `metadata.name must be spec.names.plural+"."+spec.group ("${plural}.${group}")`,
    );
  const versions = (Array.isArray(spec.versions) ? spec.versions : []).filter(isObject);
  const served = versions.filter((v) => v.served !== false && typeof v.name === 'string');
  if (served.length === 0) throw new Error('spec.versions must have at least one served version');
  const stored = storageVersion(served) as JsonObject;
  const subresources = isObject(stored.subresources) ? stored.subresources : {};
  const schemaHolder = isObject(stored.schema) ? stored.schema : {};
  const cols = Array.isArray(stored.additionalPrinterColumns)
    ? stored.additionalPrinterColumns
    : [];
  const strings = (v: unknown): string[] =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  const info: ResourceInfo = {
    group,
    version: stored.name as string,
    versions: served.map((v) => v.name as string),
    plural,
    singular: typeof names.singular === 'string' ? names.singular : kind.toLowerCase(),
    kind,
    listKind: typeof names.listKind === 'string' ? names.listKind : `${kind}List`,
    namespaced: spec.scope !== 'Cluster',
    shortNames: strings(names.shortNames),
    categories: strings(names.categories),
    statusSubresource: isObject(subresources.status),
    generation: true,
    printerColumns: cols.filter(isObject).map((c) => ({
      name: String(c.name),
      type: String(c.type ?? 'string'),
      jsonPath: String(c.jsonPath ?? ''),
      ...(typeof c.description === 'string' ? { description: c.description } : {}),
      ...(typeof c.priority === 'number' ? { priority: c.priority } : {}),
      ...(typeof c.format === 'string' ? { format: c.format } : {}),
    })),
    strategicMerge: false,
    crdName: crd.metadata.name,
  };
  if (isObject(schemaHolder.openAPIV3Schema)) info.schema = schemaHolder.openAPIV3Schema;
  return info;
}

/** Looks resources up by group, version and plural (what URLs name). */
export class ResourceCatalog {
  private byGroupPlural = new Map<string, ResourceInfo>();

  constructor(resources: readonly ResourceInfo[] = BUILTIN_RESOURCES) {
    for (const r of resources) this.add(r);
  }

  add(r: ResourceInfo): void {
    this.byGroupPlural.set(resourceKey(r), r);
  }

  remove(group: string, plural: string): void {
    this.byGroupPlural.delete(resourceKey({ group, plural }));
  }

  /** The resource served at GROUP/VERSION/PLURAL, if any. */
  find(group: string, version: string, plural: string): ResourceInfo | undefined {
    const r = this.byGroupPlural.get(resourceKey({ group, plural }));
    return r && r.versions.includes(version) ? r : undefined;
  }

  byKey(key: string): ResourceInfo | undefined {
    return this.byGroupPlural.get(key);
  }

  all(): ResourceInfo[] {
    return [...this.byGroupPlural.values()];
  }

  /** Groups with their served versions, core first, then in insertion order. */
  groups(): { group: string; versions: string[] }[] {
    const out = new Map<string, Set<string>>();
    for (const r of this.all()) {
      const set = out.get(r.group) ?? new Set<string>();
      for (const v of r.versions) set.add(v);
      out.set(r.group, set);
    }
    return [...out.entries()].map(([group, vs]) => ({ group, versions: [...vs] }));
  }
}
