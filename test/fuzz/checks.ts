// What the components may write, checked on every write body the recording
// proxies saw: a sidecar writes only its NNC's spec (and Events), a sane
// request and ids the status listed; a fulfiller writes statuses whose
// dynamic containers hold unique, well-formed addresses of the pod subnet
// under UUID ids, and subnet states with a boolean. Pure.
import { isIP } from 'node:net';
import type { RecordedRequest } from '../support/recording-proxy.ts';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function inSubnet24(ip: unknown, prefix: string): boolean {
  if (typeof ip !== 'string' || isIP(ip) !== 4 || !ip.startsWith(prefix)) return false;
  const host = Number(ip.slice(prefix.length));
  return host >= 1 && host <= 254;
}

function parse(body: string | undefined): Record<string, unknown> | undefined {
  try {
    return JSON.parse(body ?? '') as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Problems with the sidecar's writes; `knownIds` are ids some status of its NNC listed. */
export function sidecarWriteProblems(
  writes: readonly RecordedRequest[],
  node: string,
  knownIds: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  for (const w of writes) {
    if (w.method === 'POST' && /\/events$/.test(w.path)) continue;
    if (w.method === 'PUT' && /\/events\/[^/]+$/.test(w.path)) continue;
    // The schedule signal: a JSON patch of its own Node's taints, nothing else
    // (docs/decisions/0035; the node-taint policy holds it to its one taint).
    if (w.method === 'PATCH' && w.path.endsWith(`/api/v1/nodes/${node}`)) {
      const raw = parse(w.body) as unknown;
      const ops = (Array.isArray(raw) ? raw : []) as Array<{ path?: string; value?: unknown }>;
      const beyond = ops.filter(
        (o) =>
          o.path !== '/spec/taints' &&
          o.path !== '/metadata/resourceVersion' &&
          !(o.path === '/spec' && Object.keys(o.value ?? {}).every((k) => k === 'taints')),
      );
      if (ops.length === 0 || beyond.length > 0)
        problems.push(
          `sidecar patched its Node beyond its taints: ${beyond.map((o) => o.path).join(', ')}`,
        );
      continue;
    }
    if (w.method !== 'PATCH' || !w.path.endsWith(`/nodenetworkconfigs/${node}`)) {
      problems.push(`sidecar wrote ${w.method} ${w.path}`);
      continue;
    }
    const body = parse(w.body);
    const spec = body?.spec as Record<string, unknown> | undefined;
    const extra = Object.keys(body ?? {}).filter(
      (k) => !['apiVersion', 'kind', 'metadata', 'spec'].includes(k),
    );
    if (extra.length > 0) problems.push(`sidecar wrote ${extra.join(', ')} of its NNC`);
    const req = spec?.requestedIPCount;
    if (typeof req !== 'number' || !Number.isInteger(req) || req < 0 || req > 250)
      problems.push(`sidecar wrote spec.requestedIPCount ${JSON.stringify(req)}`);
    // An empty ipsNotInUse is left out of the apply (docs/decisions/0012).
    const ids = spec?.ipsNotInUse ?? [];
    if (!Array.isArray(ids)) problems.push(`sidecar wrote spec.ipsNotInUse ${JSON.stringify(ids)}`);
    else {
      if (new Set(ids).size !== ids.length) problems.push(`sidecar wrote a duplicate id: ${ids}`);
      for (const id of ids)
        if (typeof id !== 'string' || !knownIds.has(id))
          problems.push(`sidecar wrote ipsNotInUse ${JSON.stringify(id)}, never in a status`);
    }
  }
  return problems;
}

/** Problems with one NNC status the fulfiller wrote. */
export function statusProblems(status: unknown, subnetPrefix: string): string[] {
  const problems: string[] = [];
  const s = status as Record<string, unknown> | undefined;
  if (typeof s !== 'object' || s === null) return [`status ${JSON.stringify(status)}`];
  const ncs = s.networkContainers;
  if (!Array.isArray(ncs)) return [`status.networkContainers ${JSON.stringify(ncs)}`];
  const ips = new Set<string>();
  const ids = new Set<string>();
  let dynamic = 0;
  ncs.forEach((nc: Record<string, unknown>, i) => {
    const at = `status.networkContainers[${i}]`;
    if (typeof nc !== 'object' || nc === null) {
      problems.push(`${at} ${JSON.stringify(nc)}`);
      return;
    }
    if (typeof nc.id !== 'string' || nc.id === '')
      problems.push(`${at}.id ${JSON.stringify(nc.id)}`);
    const mode = nc.assignmentMode ?? 'dynamic';
    if (mode !== 'dynamic' && mode !== 'static')
      problems.push(`${at}.assignmentMode ${JSON.stringify(mode)}`);
    if (mode !== 'dynamic') return;
    dynamic += 1;
    if (!inSubnet24(nc.primaryIP, subnetPrefix))
      problems.push(`${at}.primaryIP ${JSON.stringify(nc.primaryIP)}`);
    const list = nc.ipAssignments;
    if (!Array.isArray(list)) {
      problems.push(`${at}.ipAssignments ${JSON.stringify(list)}`);
      return;
    }
    list.forEach((a: Record<string, unknown>, j) => {
      const where = `${at}.ipAssignments[${j}]`;
      if (typeof a !== 'object' || a === null)
        return void problems.push(`${where} ${JSON.stringify(a)}`);
      if (typeof a.name !== 'string' || !UUID.test(a.name))
        problems.push(`${where}.name ${JSON.stringify(a.name)}`);
      if (!inSubnet24(a.ip, subnetPrefix)) problems.push(`${where}.ip ${JSON.stringify(a.ip)}`);
      if (typeof a.ip === 'string') {
        if (ips.has(a.ip) || a.ip === nc.primaryIP) problems.push(`${where}.ip ${a.ip} twice`);
        ips.add(a.ip);
      }
      if (typeof a.name === 'string') {
        if (ids.has(a.name)) problems.push(`${where}.name ${a.name} twice`);
        ids.add(a.name);
      }
    });
    if (s.assignedIPCount !== list.length)
      problems.push(
        `status.assignedIPCount ${JSON.stringify(s.assignedIPCount)} for ${list.length}`,
      );
  });
  if (dynamic > 1) problems.push(`${dynamic} dynamic network containers`);
  return problems;
}

/** Problems with the fulfiller's writes. */
export function fulfillerWriteProblems(
  writes: readonly RecordedRequest[],
  subnetPrefix: string,
): string[] {
  const problems: string[] = [];
  for (const w of writes) {
    const body = parse(w.body);
    if (/\/events(\/[^/]+)?$/.test(w.path)) continue;
    if (/\/nodenetworkconfigs\/[^/]+\/status$/.test(w.path)) {
      for (const p of statusProblems(body?.status, subnetPrefix))
        problems.push(`fulfiller ${w.method} ${w.path}: ${p}`);
    } else if (/\/clustersubnetstates(\/[^/]+\/status)?$/.test(w.path)) {
      const status = body?.status as Record<string, unknown> | undefined;
      if (status !== undefined && typeof status.exhausted !== 'boolean')
        problems.push(`fulfiller wrote CSS status.exhausted ${JSON.stringify(status.exhausted)}`);
    } else if (w.method === 'PATCH' && /\/nodenetworkconfigs\/[^/]+$/.test(w.path)) {
      // The term mark and the addresses finalizer: metadata only, never the spec.
      const keys = Object.keys(body ?? {});
      if (keys.some((k) => k !== 'metadata'))
        problems.push(`fulfiller patched ${w.path} beyond its metadata: ${keys.join(', ')}`);
    } else if (
      !(w.method === 'POST' && /\/nodenetworkconfigs$/.test(w.path)) &&
      !(w.method === 'DELETE' && /\/nodenetworkconfigs\/[^/]+$/.test(w.path))
    ) {
      problems.push(`fulfiller wrote ${w.method} ${w.path}`);
    }
  }
  return problems;
}
