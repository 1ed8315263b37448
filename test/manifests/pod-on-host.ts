// A pod of the rendered manifests run on this machine as a kubelet would run
// it, its volumes reproduced under a temp dir standing for the node's root
// (`<root>/host/...` for a hostPath, `<root>/pod/<volume>` for an emptyDir
// or a ConfigMap): each container's command, args and environment exactly
// as rendered, with every path under one of its mounts rewritten to where
// that mount is here; `$(VAR)` expanded and the downward API's fields
// filled in, as the kubelet does; the image's WORKDIR (/app, the
// repository's files: Dockerfile) is the checkout, and `/app/...` its paths.
// What differs from a node, and is said where it matters: the processes run
// as this user (root in CI), in this machine's namespaces.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
/** The image's ENTRYPOINT (Dockerfile). */
const ENTRYPOINT = ['bin/pool-monitor'];

export interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { fieldRef?: { fieldPath: string } };
  }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: { runAsUser?: number };
  readinessProbe?: { httpGet: { host?: string; path: string; port: number } };
  livenessProbe?: { httpGet: { host?: string; path: string; port: number } };
}

export interface Volume {
  name: string;
  hostPath?: { path: string; type?: string };
  emptyDir?: object;
  configMap?: { name: string; optional?: boolean };
}

export interface PodSpec {
  initContainers?: Container[];
  containers: Container[];
  volumes?: Volume[];
}

export interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template: { spec: PodSpec } };
  data?: Record<string, string>;
}

/** The pod's spec of the workload `name` among the rendered objects. */
export function podOf(objects: Rendered[], kind: string, name: string): PodSpec {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o?.spec) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return o.spec.template.spec;
}

/** A node's file system under `root`, and the pods' volumes on it. */
export class NodeTree {
  readonly root: string;
  constructor(root: string) {
    this.root = root;
  }

  /** Where the node's `path` is here. */
  host(path: string): string {
    return join(this.root, 'host', path);
  }

  /**
   * Each volume of the pod made as the kubelet makes it: a hostPath
   * DirectoryOrCreate created (a Directory must be there: made with the
   * node), an emptyDir empty, a ConfigMap's keys as files (its name from
   * `configMaps`, by the generated name; an optional one absent: empty).
   */
  volumes(pod: PodSpec, configMaps: Rendered[]): Map<string, string> {
    const out = new Map<string, string>();
    for (const v of pod.volumes ?? []) {
      if (v.hostPath) {
        const at = this.host(v.hostPath.path);
        mkdirSync(at, { recursive: true });
        out.set(v.name, at);
      } else {
        const at = join(this.root, 'pod', v.name);
        mkdirSync(at, { recursive: true });
        if (v.configMap) {
          const cm = configMaps.find((c) => c.metadata.name === v.configMap!.name);
          if (!cm && !v.configMap.optional)
            throw new Error(`the ConfigMap ${v.configMap.name} of volume ${v.name} is missing`);
          // The kubelet's layout: the keys beside ..data.
          mkdirSync(join(at, '..data'), { recursive: true });
          for (const [key, text] of Object.entries(cm?.data ?? {}))
            writeFileSync(join(at, key), text);
        }
        out.set(v.name, at);
      }
    }
    return out;
  }
}

/** Every mountPath of `c` → where it is here, the image's /app being the checkout. */
export function mountsOf(c: Container, volumes: Map<string, string>): [string, string][] {
  const out: [string, string][] = [['/app', REPO]];
  for (const m of c.volumeMounts ?? []) {
    const at = volumes.get(m.name);
    if (!at) throw new Error(`${c.name}: no volume ${m.name}`);
    out.push([m.mountPath, at]);
  }
  return out.sort((a, b) => b[0].length - a[0].length);
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `text` with every path at or under a mount rewritten (in one pass) to where that mount is here. */
export function rewrite(text: string, mounts: [string, string][]): string {
  if (mounts.length === 0) return text;
  const to = new Map(mounts);
  const any = mounts.map(([from]) => escape(from)).join('|');
  return text.replace(
    new RegExp(`(?<![\\w./-])(${any})(?=/|$|[^\\w.-])`, 'g'),
    (from) => to.get(from) ?? from,
  );
}

/** The downward API's fields this test's node has. */
export interface Downward {
  'spec.nodeName': string;
  'status.hostIP': string;
}

/** The container's environment as the kubelet gives it: values, fields, `$(VAR)` of earlier ones. */
export function envOf(
  c: Container,
  downward: Downward,
  mounts: [string, string][],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (field !== undefined) {
      const v = downward[field as keyof Downward];
      if (v === undefined) throw new Error(`${c.name}: no downward field ${field} here`);
      env[e.name] = v;
    } else env[e.name] = rewrite(expand(e.value ?? '', env), mounts);
  }
  return env;
}

/** `$(VAR)` expanded from `env`, as the kubelet expands it; an unknown one stays as written. */
export function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string) => env[name] ?? all);
}

/** The command line of `c` (the image's ENTRYPOINT when it has no command), rewritten for here. */
export function commandOf(
  c: Container,
  env: Record<string, string>,
  mounts: [string, string][],
): string[] {
  const argv = [...(c.command ?? ENTRYPOINT), ...(c.args ?? [])].map((a) =>
    rewrite(expand(a, env), mounts),
  );
  // The image's node is Node 24, as this process's.
  if (argv[0] === 'node') argv[0] = process.execPath;
  return argv;
}

/** Runs an init container to its end in the checkout (the image's WORKDIR); its output. */
export function runToEnd(
  c: Container,
  volumes: Map<string, string>,
  downward: Downward,
): { code: number; out: string; err: string } {
  const mounts = mountsOf(c, volumes);
  const env = envOf(c, downward, mounts);
  const [file, ...args] = commandOf(c, env, mounts);
  const r = spawnSync(file!, args, {
    cwd: REPO,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    timeout: 60_000,
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}
