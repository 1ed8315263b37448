// The simulated kubelet's CNI for real (embedded --netns): a CniClient that
// does what a container runtime does for a pod sandbox on a node. ADD: a
// network namespace for the pod, then each plugin of the node's conflist run
// in the node's namespace (where a plugin's host side goes) with the CNI_*
// environment and the plugin's configuration (name, cniVersion and the
// previous plugin's result added) on stdin; the addresses the chain reports
// (one per family, IPv4 first: a dual-stack pod has two) are read back from
// the pod's eth0, pinged from the node's namespace (and from another
// node's) in their own family (`ping -4`, `ping -6`), and are what the
// kubelet reports as the pod IPs. An IPv6 address is pinged once the
// kernel's duplicate address detection is done with it (RFC 4862: until
// then it is "tentative" and takes no traffic); a duplicate it finds fails
// the ADD, as two pods holding one address would. DEL: the chain
// in reverse order, then the namespace goes. A failed
// ADD is undone (DEL, namespace removed) and retried by the kubelet, as a
// runtime retries a sandbox. Root only (CAP_NET_ADMIN); what it creates is
// named after the run (`prefix`) so that runs never collide.
import { execFile } from 'node:child_process';
import { isIP } from 'node:net';
import type { CniClient, IpamResult, PodRef } from './cni.ts';
import { addressFamily, familyName, type FamilyName } from '../../src/nnc/family.ts';

/** The reference plugins' directory (Debian's containernetworking-plugins). */
export const CNI_DIR = '/usr/lib/cni';

export interface Exec {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; never rejects (the code says how it went). */
export function run(
  cmd: string,
  args: readonly string[],
  options: { env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {},
): Promise<Exec> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      [...args],
      {
        encoding: 'utf8',
        timeout: options.timeoutMs ?? 30_000,
        ...(options.env ? { env: options.env } : {}),
      },
      (err, stdout, stderr) => {
        const code = err ? (err as { code?: unknown }).code : 0;
        resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.stdin ?? '');
  });
}

/** `ip netns exec NS cmd...`. */
export function inNs(ns: string, args: readonly string[]): Promise<Exec> {
  return run('ip', ['netns', 'exec', ns, ...args]);
}

/** A conflist: the network's name and version, and its plugins in order. */
export interface Conflist {
  cniVersion: string;
  name: string;
  plugins: Record<string, unknown>[];
}

/** What the runtime did, for the report. */
export interface NetnsCounters {
  /** ADDs the chain completed, the address on the pod's eth0 equal to the result's. */
  configured: number;
  /** ADDs that failed (undone, retried by the kubelet). */
  addFailed: number;
  /** The address on eth0 differed from the chain's result (counted as failed ADDs too). */
  mismatched: number;
  /** Pods whose every address answered a ping from the node's namespace. */
  pingedOnNode: number;
  /** Pods whose every address answered a ping from another node's namespace. */
  pingedAcross: number;
  /** Pings unanswered (one per address and place). */
  pingFailed: number;
  /** Addresses that answered, by family: from their node, from another node. */
  pingedByFamily: Partial<Record<FamilyName, { onNode: number; across: number }>>;
  /** IPv6 addresses the kernel found a duplicate of on the segment (the ADD failed). */
  dadFailed: number;
  /** The longest wait for an IPv6 address to leave "tentative", ms. */
  dadWaitMaxMs: number;
  /** DELs the chain completed. */
  deleted: number;
  delFailed: number;
}

export interface NodeRuntimeOptions {
  /** The node's namespace (its "host"). */
  nodeNs: string;
  conflist: Conflist;
  /** CNI_PATH: where the plugins are found. */
  cniPath: string;
  /** Makes a pod's namespace (unique name), registered for cleanup; returns its name. */
  newPodNs(): Promise<string>;
  /** Removes a pod's namespace. */
  removePodNs(ns: string): Promise<void>;
  /** Told of an address now on the node, before it is pinged; resolves when done. */
  onConfigured?(ip: string): Promise<void>;
  /** Told of an address gone from the node. */
  onRemoved?(ip: string): Promise<void>;
  /** Another node's namespace to ping from (cross-node), or undefined with one node. */
  pingFrom?(): string | undefined;
  counters: NetnsCounters;
  /** A line for the component log. */
  log(level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>): void;
}

interface Attachment {
  ref: PodRef;
  ns: string;
  /** One per family, IPv4 first. */
  ips: string[];
}

/** The CNI runtime of one node: a CniClient, plus tearDown() for the pods still attached. */
export class NodeRuntime implements CniClient {
  private readonly attached = new Map<string, Attachment>();

  private readonly o: NodeRuntimeOptions;

  constructor(options: NodeRuntimeOptions) {
    this.o = options;
  }

  /** Pods with a configured namespace now. */
  attachedPods(): number {
    return this.attached.size;
  }

  async requestIp(pod: PodRef): Promise<IpamResult> {
    const known = this.attached.get(pod.podUid);
    if (known) return { kind: 'ok', ips: [...known.ips] };
    const t0 = performance.now();
    const ns = await this.o.newPodNs();
    const t1 = performance.now();
    const results = await this.chain('ADD', pod, ns);
    const t2 = performance.now();
    const failed = results.failure;
    let ips = failed ? [] : resultAddresses(results.last);
    let why = failed?.msg ?? (ips.length > 0 ? undefined : 'the chain returned no address');
    if (ips.length > 0) {
      const onEth0 = await run('ip', ['-n', ns, '-o', 'addr', 'show', 'dev', 'eth0']);
      const missing = ips.filter((ip) => !onEth0.stdout.includes(` ${ip}/`));
      if (missing.length > 0) {
        this.o.counters.mismatched += 1;
        why = `the chain returned ${ips.join(', ')} but eth0 has ${onEth0.stdout.trim() || 'no address'}`;
        ips = [];
      }
    }
    const t3 = performance.now();
    if (ips.some((ip) => isIP(ip) === 6)) {
      const dad = await settled(ns, 'eth0');
      this.o.counters.dadWaitMaxMs = Math.max(
        this.o.counters.dadWaitMaxMs,
        Math.round(performance.now() - t3),
      );
      if (dad !== undefined) {
        if (/dadfailed/.test(dad)) this.o.counters.dadFailed += 1;
        why = `IPv6 duplicate address detection on eth0: ${dad}`;
        ips = [];
      }
    }
    if (ips.length === 0) {
      this.o.counters.addFailed += 1;
      this.o.log('warn', 'pod network ADD failed; undone, retried', {
        pod: `${pod.podNamespace}/${pod.podName}`,
        error: why,
      });
      await this.chain('DEL', pod, ns);
      await this.o.removePodNs(ns);
      // 11: try again later (the plugin waited out "no address yet"); 7: bad configuration.
      if (failed?.code === 11) return { kind: 'no-ip', message: why ?? '' };
      return { kind: 'error', retryable: failed?.code !== 7, message: why ?? '' };
    }
    this.attached.set(pod.podUid, { ref: pod, ns, ips });
    this.o.counters.configured += 1;
    const t4 = performance.now();
    for (const ip of ips) await this.o.onConfigured?.(ip);
    const t5 = performance.now();
    await this.ping(pod, ips);
    this.o.log('info', 'pod network configured', {
      pod: `${pod.podNamespace}/${pod.podName}`,
      ip: ips[0],
      ...(ips.length > 1 ? { ips } : {}),
      ns,
      ms: {
        netns: Math.round(t1 - t0),
        add: Math.round(t2 - t1),
        check: Math.round(t3 - t2),
        dad: Math.round(t4 - t3),
        node: Math.round(t5 - t4),
        ping: Math.round(performance.now() - t5),
      },
    });
    return { kind: 'ok', ips: [...ips] };
  }

  async releaseIp(pod: PodRef): Promise<IpamResult> {
    const held = this.attached.get(pod.podUid);
    const results = await this.chain('DEL', pod, held?.ns);
    if (results.failure) {
      this.o.counters.delFailed += 1;
      return { kind: 'error', retryable: true, message: results.failure.msg };
    }
    this.o.counters.deleted += 1;
    if (held) {
      this.attached.delete(pod.podUid);
      for (const ip of held.ips) await this.o.onRemoved?.(ip);
      await this.o.removePodNs(held.ns);
    }
    return { kind: 'ok', ips: held ? [...held.ips] : [] };
  }

  /** DEL for every pod still attached (the node is going away), `limit` at a time. */
  async tearDown(limit = 4): Promise<void> {
    const pods = [...this.attached.values()].map((a) => a.ref);
    const next = async (): Promise<void> => {
      for (let pod = pods.shift(); pod !== undefined; pod = pods.shift()) await this.releaseIp(pod);
    };
    await Promise.all(Array.from({ length: limit }, next));
  }

  /** Each address pinged in its family from the pod's node, then from another node. */
  private async ping(pod: PodRef, ips: readonly string[]): Promise<void> {
    const name = `${pod.podNamespace}/${pod.podName}`;
    const other = this.o.pingFrom?.();
    const { counters } = this.o;
    let onNode = 0;
    let across = 0;
    for (const ip of ips) {
      const family = familyName(addressFamily(ip) ?? 4);
      const tally = (counters.pingedByFamily[family] ??= { onNode: 0, across: 0 });
      if (await pingOnce(this.o.nodeNs, ip)) {
        onNode += 1;
        tally.onNode += 1;
      } else {
        counters.pingFailed += 1;
        this.o.log('error', 'pod not answering ping from its node', { pod: name, ip });
      }
      if (other === undefined) continue;
      if (await pingOnce(other, ip)) {
        across += 1;
        tally.across += 1;
      } else {
        counters.pingFailed += 1;
        this.o.log('error', 'pod not answering ping from another node', { pod: name, ip, other });
      }
    }
    if (onNode === ips.length) counters.pingedOnNode += 1;
    if (other !== undefined && across === ips.length) counters.pingedAcross += 1;
  }

  /**
   * Runs the conflist's plugins for one verb, as a runtime does: ADD in
   * order, each given the previous result; DEL and the rest in reverse
   * order. A DEL goes on after a failure (the spec: best effort).
   */
  private async chain(
    verb: 'ADD' | 'DEL',
    pod: PodRef,
    ns: string | undefined,
  ): Promise<{ last: unknown; failure?: { code: number; msg: string } }> {
    const { conflist } = this.o;
    const plugins = verb === 'ADD' ? conflist.plugins : [...conflist.plugins].reverse();
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      CNI_COMMAND: verb,
      CNI_CONTAINERID: pod.podUid,
      CNI_IFNAME: 'eth0',
      CNI_PATH: this.o.cniPath,
      // The reference plugins 1.1.1 refuse CNI_ARGS they do not know unless told to ignore them.
      CNI_ARGS: [
        'IgnoreUnknown=1',
        `K8S_POD_NAMESPACE=${pod.podNamespace}`,
        `K8S_POD_NAME=${pod.podName}`,
        `K8S_POD_INFRA_CONTAINER_ID=${pod.podUid}`,
        `K8S_POD_UID=${pod.podUid}`,
      ].join(';'),
      ...(ns ? { CNI_NETNS: `/var/run/netns/${ns}` } : {}),
    };
    let last: unknown;
    let failure: { code: number; msg: string } | undefined;
    for (const plugin of plugins) {
      const type = String(plugin.type);
      const conf = {
        ...plugin,
        cniVersion: conflist.cniVersion,
        name: conflist.name,
        ...(verb === 'ADD' && last !== undefined ? { prevResult: last } : {}),
      };
      const binary = await pluginPath(this.o.cniPath, type);
      const res = await run('ip', ['netns', 'exec', this.o.nodeNs, binary], {
        env,
        stdin: JSON.stringify(conf),
        timeoutMs: 60_000,
      });
      const parsed = parseJson(res.stdout);
      if (res.code !== 0) {
        const code = typeof parsed?.code === 'number' ? parsed.code : 999;
        const msg = `${type} ${verb}: ${typeof parsed?.msg === 'string' ? parsed.msg : res.stdout.trim() || res.stderr.trim() || `exit ${res.code}`}`;
        failure ??= { code, msg };
        if (verb === 'ADD') break;
      } else if (verb === 'ADD') last = parsed;
    }
    return failure ? { last, failure } : { last };
  }
}

/** One echo request to `ip` from namespace `ns`, in the address's family; whether it was answered. */
async function pingOnce(ns: string, ip: string): Promise<boolean> {
  const family = isIP(ip) === 6 ? '-6' : '-4';
  return (await inNs(ns, ['ping', family, '-c', '1', '-W', '2', ip])).code === 0;
}

/** How often, and how long at most, an interface's IPv6 addresses are looked at until none is tentative. */
const DAD_POLL_MS = 50;
const DAD_WAIT_MS = 10_000;

/**
 * Waits until no IPv6 address of `dev` in `ns` is tentative (RFC 4862's
 * duplicate address detection; about a second with the kernel's defaults,
 * one probe a second). Undefined when they all settled; else what is wrong:
 * a duplicate found (`dadfailed`) or still tentative after DAD_WAIT_MS.
 */
export async function settled(ns: string, dev: string): Promise<string | undefined> {
  const deadline = Date.now() + DAD_WAIT_MS;
  for (;;) {
    const res = await run('ip', ['-n', ns, '-6', '-o', 'addr', 'show', 'dev', dev]);
    const lines = res.stdout.split('\n').filter((l) => / scope global /.test(l));
    const failed = lines.find((l) => / dadfailed/.test(l));
    if (failed) return `dadfailed: ${failed.replace(/\s+/g, ' ').trim()}`;
    const tentative = lines.filter((l) => / tentative/.test(l));
    if (res.code === 0 && tentative.length === 0) return undefined;
    if (Date.now() > deadline)
      return `still tentative after ${DAD_WAIT_MS} ms: ${tentative.join('; ').replace(/\s+/g, ' ').trim() || res.stderr.trim()}`;
    await new Promise((r) => setTimeout(r, DAD_POLL_MS));
  }
}

const found = new Map<string, string>();

/** The plugin's binary: the first directory of CNI_PATH that has it. */
async function pluginPath(cniPath: string, type: string): Promise<string> {
  const key = `${cniPath}|${type}`;
  const hit = found.get(key);
  if (hit) return hit;
  for (const dir of cniPath.split(':')) {
    const candidate = `${dir}/${type}`;
    if ((await run('test', ['-x', candidate])).code === 0) {
      found.set(key, candidate);
      return candidate;
    }
  }
  return `${CNI_DIR}/${type}`;
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The addresses of a CNI result without their prefixes, the first of each
 * family, IPv4 first (a dual-stack result has one `ips` entry per family).
 */
export function resultAddresses(result: unknown): string[] {
  const entries = (result as { ips?: { address?: unknown }[] } | undefined)?.ips ?? [];
  const addresses = entries.map((e) =>
    typeof e?.address === 'string' ? (e.address.split('/')[0] ?? '') : '',
  );
  const out: string[] = [];
  for (const family of [4, 6]) {
    const ip = addresses.find((a) => isIP(a) === family);
    if (ip !== undefined) out.push(ip);
  }
  return out;
}
