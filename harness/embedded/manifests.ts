// The objects of manifests/ as the README's install sends them
// (`kubectl apply -k manifests/crds/`, then `kubectl apply -k manifests/`), read by the embedded cluster (and the tests) so the product always
// runs with exactly what its manifests grant. A small kustomization reader:
// `resources` (files and directories with their own kustomization.yaml,
// recursively), `namespace` (set on every namespaced object and on the
// ServiceAccount subjects that follow them, as kustomize does) and `images`
// (the containers' images; a test holds the reader to `kubectl kustomize`).
// Anything else kustomize can do (patches, generators, name prefixes) is
// refused with a clear error: the overlays that use them (manifests/azure/)
// are for real clusters.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const MANIFESTS_DIR = fileURLToPath(new URL('../../manifests/', import.meta.url));

export interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** Kinds that live outside namespaces (the ones manifests/ may hold). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'PriorityClass',
  'StorageClass',
]);

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images']);

/** An `images` entry: the image `name` runs as newName, at newTag or digest. */
export interface ImageOverride {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

export const isNamespaced = (kind: string): boolean => !CLUSTER_SCOPED.has(kind);

/** The CRDs' own kustomization, applied first and alone (README, "Install"). */
export const CRDS_SUBDIR = 'crds';

/**
 * What the two-step install applies: the CRDs of `dir`/crds/ (when there),
 * then the kustomization of `dir`.
 */
export function readInstall(dir: string = MANIFESTS_DIR): ManifestObject[] {
  const crds = join(dir, CRDS_SUBDIR);
  const first = existsSync(join(crds, 'kustomization.yaml')) ? readKustomization(crds) : [];
  return [...first, ...readKustomization(dir)];
}

/** Every object of the kustomization in `dir`, in its resources' order. */
export function readKustomization(dir: string = MANIFESTS_DIR): ManifestObject[] {
  return read(dir, dir);
}

function read(dir: string, root: string): ManifestObject[] {
  const where = relative(root, dir) || '.';
  const file = join(dir, 'kustomization.yaml');
  if (!existsSync(file)) throw new ManifestError(`${where}: no kustomization.yaml`);
  const k = parseOne(file, root) as { resources?: unknown; namespace?: unknown; images?: unknown };
  for (const field of Object.keys(k))
    if (!KUSTOMIZATION_FIELDS.has(field))
      throw new ManifestError(
        `${where}/kustomization.yaml: "${field}" is not supported by the embedded cluster's reader (resources, namespace and images are)`,
      );
  if (!Array.isArray(k.resources))
    throw new ManifestError(`${where}/kustomization.yaml: resources must be a list`);
  const objects = k.resources.flatMap((r): ManifestObject[] => {
    const path = join(dir, String(r));
    if (!existsSync(path))
      throw new ManifestError(`${where}/kustomization.yaml: resource ${String(r)} not found`);
    return statSync(path).isDirectory() ? read(path, root) : parseFile(path, root);
  });
  const moved = typeof k.namespace === 'string' ? inNamespace(objects, k.namespace) : objects;
  if (k.images === undefined) return moved;
  if (
    !Array.isArray(k.images) ||
    k.images.some((i) => typeof (i as ImageOverride)?.name !== 'string')
  )
    throw new ManifestError(`${where}/kustomization.yaml: images must be a list of {name, ...}`);
  return withImages(moved, k.images as ImageOverride[]);
}

/** kustomize's image transformer over the pod templates' containers and init containers. */
export function withImages(
  objects: ManifestObject[],
  images: readonly ImageOverride[],
): ManifestObject[] {
  const retag = (image: string): string => {
    const at = image.indexOf('@');
    const base = at >= 0 ? image.slice(0, at) : image;
    const colon = base.lastIndexOf(':');
    const name = colon > base.lastIndexOf('/') ? base.slice(0, colon) : base;
    const o = images.find((i) => i.name === name);
    if (!o) return image;
    const old = image.slice(name.length); // ':tag', '@digest' or ''
    const suffix = o.digest ? `@${o.digest}` : o.newTag ? `:${o.newTag}` : old;
    return `${o.newName ?? name}${suffix}`;
  };
  type Container = { image?: string; [k: string]: unknown };
  type PodSpec = { containers?: Container[]; initContainers?: Container[]; [k: string]: unknown };
  return objects.map((o) => {
    const spec = o.spec as { template?: { spec?: PodSpec } } | undefined;
    const pod = spec?.template?.spec;
    if (!pod) return o;
    const swap = (cs: Container[] | undefined) =>
      cs?.map((c) => (typeof c.image === 'string' ? { ...c, image: retag(c.image) } : c));
    const newPod: PodSpec = { ...pod };
    if (pod.containers) newPod.containers = swap(pod.containers) as Container[];
    if (pod.initContainers) newPod.initContainers = swap(pod.initContainers) as Container[];
    return { ...o, spec: { ...spec, template: { ...spec.template, spec: newPod } } };
  });
}

function parseOne(file: string, root: string): Record<string, unknown> {
  const [doc] = parseFile(file, root, false);
  return (doc ?? {}) as unknown as Record<string, unknown>;
}

function parseFile(file: string, root: string, objects = true): ManifestObject[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const out: ManifestObject[] = [];
  for (const d of docs) {
    if (d.errors.length > 0)
      throw new ManifestError(`${relative(root, file)}: ${d.errors[0]?.message ?? 'invalid YAML'}`);
    const o = d.toJS() as ManifestObject | null;
    if (o === null) continue;
    if (objects && (typeof o.kind !== 'string' || typeof o.metadata?.name !== 'string'))
      throw new ManifestError(`${relative(root, file)}: an object without kind or metadata.name`);
    out.push(o);
  }
  return out;
}

/**
 * kustomize's namespace transformer, for what manifests/ holds: every
 * namespaced object moves to `namespace`; a ServiceAccount subject of a
 * binding follows when it names one of these ServiceAccounts as it was
 * (same name and namespace before the move) or is named "default".
 */
export function inNamespace(objects: ManifestObject[], namespace: string): ManifestObject[] {
  const accounts = new Set(
    objects
      .filter((o) => o.kind === 'ServiceAccount')
      .map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`),
  );
  return objects.map((o) => {
    const out: ManifestObject = isNamespaced(o.kind)
      ? { ...o, metadata: { ...o.metadata, namespace } }
      : { ...o };
    if ((o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && Array.isArray(o.subjects))
      out.subjects = (o.subjects as { kind?: string; name?: string; namespace?: string }[]).map(
        (s) =>
          s.kind === 'ServiceAccount' &&
          (s.name === 'default' || accounts.has(`${s.namespace ?? ''}/${s.name ?? ''}`))
            ? { ...s, namespace }
            : s,
      );
    return out;
  });
}
