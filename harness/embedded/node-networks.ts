// The networks of `embedded --netns` (root only): each simulated node gets
// a network namespace standing for its host, with the reference bridge
// plugin and pool-monitor-cni as its IPAM in a conflist (written beside the
// node's state), its sidecar on a unix socket with a token of its own; a
// "fabric" namespace with a bridge links the nodes (169.254.123.0/24, one
// veth each, made inside the namespaces: nothing in the host's own). The
// nodes route each other's pod addresses as the README's "On any cluster"
// asks: each address a node's pod gets is routed (/32) from every other
// node through that node, and the route goes with the pod (a routing daemon
// announcing /32s does the same). The kubelets' CniClient is a NodeRuntime
// (harness/kubelet/netns-cni.ts): a pod namespace and the real plugin chain
// for each pod. Everything is named after this process (pm<pid>-...) so
// runs never collide, and removed at the end - on a second signal or an
// unexpected exit too (a synchronous last resort on process exit).
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../src/log/logger.ts';
import {
  CNI_DIR,
  inNs,
  NodeRuntime,
  run,
  type Conflist,
  type Exec,
  type NetnsCounters,
} from '../kubelet/netns-cni.ts';

export { MAX_NETNS_NODES, MAX_NETNS_PODS, NETNS_SCENARIO } from './netns-limits.ts';

/** The repository's bin/: the pool-monitor-cni launcher a runtime finds on CNI_PATH. */
const PLUGIN_DIR = fileURLToPath(new URL('../../bin', import.meta.url));
const FABRIC_NET = '169.254.123';

/**
 * Why pool-monitor-cni cannot run here, or undefined when it can: the
 * launcher builds dist/pool-monitor-cni when it is missing or older than its
 * sources and go is on PATH (`make cni`); its VERSION answered says it runs.
 */
export function whyNoPlugin(): string | undefined {
  try {
    const out = execFileSync(`${PLUGIN_DIR}/pool-monitor-cni`, [], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', CNI_COMMAND: 'VERSION' },
      input: '{"cniVersion":"1.1.0"}',
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return out.includes('supportedVersions')
      ? undefined
      : `bin/pool-monitor-cni VERSION said: ${out}`;
  } catch (err) {
    const e = err as { stdout?: string; message: string };
    const msg = /"msg":"([^"]*)"/.exec(e.stdout ?? '')?.[1];
    return msg ?? `bin/pool-monitor-cni does not run (make cni): ${e.message}`;
  }
}

/** Why real pod networks (--netns, the real-plugin tests) cannot run here, or undefined when they can. */
export function whyNoNetns(): string | undefined {
  if (process.getuid?.() !== 0)
    return 'it needs root (network namespaces need CAP_NET_ADMIN); run it with sudo';
  if (!existsSync(`${CNI_DIR}/bridge`))
    return `no ${CNI_DIR}/bridge (apt-get install containernetworking-plugins)`;
  for (const tool of ['ip', 'ping']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `no ${tool} on PATH (apt-get install iproute2 iputils-ping)`;
    }
  }
  return whyNoPlugin();
}

/** What the report says of the networks. */
export interface NetnsReport extends NetnsCounters {
  nodes: number;
  /** The chain each node ran. */
  chain: string;
  /** How the nodes reached each other's pods. */
  routing: string;
  /** Namespaces of the run still there after the cleanup (none when it went well). */
  leftBehind: string[];
}

/** Where a node's sidecar listens for its pods' plugin, and the token it wants. */
export interface NodeApiPlace {
  socket: string;
  tokenFile: string;
}

export class NodeNetworks {
  readonly prefix = `pm${process.pid}`;
  readonly counters: NetnsCounters = {
    configured: 0,
    addFailed: 0,
    mismatched: 0,
    pingedOnNode: 0,
    pingedAcross: 0,
    pingFailed: 0,
    deleted: 0,
    delFailed: 0,
  };
  private readonly namespaces = new Set<string>();
  private readonly runtimes: NodeRuntime[] = [];
  private readonly nodeNs: string[] = [];
  private podSeq = 0;
  private readonly onExit = (): void => this.removeAllSync();
  private leftBehind: string[] = [];

  private readonly nodeNames: readonly string[];
  private readonly stateRoot: string;
  private readonly log: Logger;

  private constructor(nodeNames: readonly string[], stateRoot: string, log: Logger) {
    this.nodeNames = nodeNames;
    this.stateRoot = stateRoot;
    this.log = log;
  }

  /** The fabric and every node's namespace, conflist, socket place and token. */
  static async create(
    nodeNames: readonly string[],
    stateRoot: string,
    logger: Logger,
  ): Promise<NodeNetworks> {
    const nets = new NodeNetworks(nodeNames, stateRoot, logger.child({ component: 'netns' }));
    process.on('exit', nets.onExit);
    try {
      await nets.build();
    } catch (err) {
      await nets.removeAll();
      throw err;
    }
    return nets;
  }

  /** The node's sidecar's unix socket and token file (--listen unix:, --node-api-token-file). */
  nodeApi(index: number): NodeApiPlace {
    const dir = join(this.stateRoot, this.nodeNames[index] ?? `node-${index}`);
    return { socket: join(dir, 'node-api.sock'), tokenFile: join(dir, 'node-api-token') };
  }

  /** The node's namespace. */
  nodeNamespace(index: number): string {
    return this.nodeNs[index] ?? '';
  }

  /** The kubelet's CNI on node `index`: the real chain in its namespace. */
  runtime(index: number): NodeRuntime {
    const existing = this.runtimes[index];
    if (existing) return existing;
    const others = (): number[] =>
      this.nodeNs.map((_, j) => j).filter((j) => j !== index && this.nodeNs[j]);
    const via = `${FABRIC_NET}.${index + 1}`;
    const node = this.nodeNames[index] ?? `node-${index}`;
    const rt = new NodeRuntime({
      nodeNs: this.nodeNs[index] ?? '',
      conflist: this.conflist(index),
      cniPath: `${PLUGIN_DIR}:${CNI_DIR}`,
      counters: this.counters,
      newPodNs: async () => {
        this.podSeq += 1;
        return this.addNs(`p${this.podSeq}`);
      },
      removePodNs: (ns) => this.removeNs(ns),
      onConfigured: async (ip) => {
        for (const j of others())
          await checked(
            run('ip', ['-n', this.nodeNs[j]!, 'route', 'replace', `${ip}/32`, 'via', via]),
          );
      },
      onRemoved: async (ip) => {
        // The route may be gone with a failed ADD's undo: not an error.
        for (const j of others())
          await run('ip', ['-n', this.nodeNs[j]!, 'route', 'del', `${ip}/32`]);
      },
      pingFrom: () => {
        const o = others();
        return o.length > 0 ? this.nodeNs[o[0]!] : undefined;
      },
      log: (level, message, fields) => this.log[level](message, { node, ...fields }),
    });
    this.runtimes[index] = rt;
    return rt;
  }

  /** DEL for the pods still attached (after the kubelets stopped, while the sidecars run). */
  async tearDownPods(): Promise<void> {
    await Promise.all(this.runtimes.map((rt) => rt.tearDown()));
  }

  /** Every namespace of the run removed (their links and bridges go with them); what is left, if anything. */
  async removeAll(): Promise<string[]> {
    const all = [...this.namespaces].reverse();
    await Promise.all(all.map((ns) => this.removeNs(ns)));
    this.leftBehind = (await run('ip', ['netns', 'list'])).stdout
      .split('\n')
      .map((l) => l.split(' ')[0] ?? '')
      .filter((ns) => ns.startsWith(`${this.prefix}-`));
    process.off('exit', this.onExit);
    if (this.leftBehind.length > 0)
      this.log.error('namespaces left behind', { namespaces: this.leftBehind });
    else this.log.info('every namespace of the run removed', { removed: all.length });
    return this.leftBehind;
  }

  report(): NetnsReport {
    return {
      nodes: this.nodeNames.length,
      chain: 'bridge (cni0, isGateway) + pool-monitor-cni',
      routing:
        this.nodeNames.length > 1
          ? `per-node /32 routes over a fabric bridge (${FABRIC_NET}.0/24)`
          : 'one node: none needed',
      ...this.counters,
      leftBehind: this.leftBehind,
    };
  }

  private async build(): Promise<void> {
    const n = this.nodeNames.length;
    const fabric = n > 1 ? await this.addNs('fabric') : undefined;
    if (fabric) {
      await checked(run('ip', ['-n', fabric, 'link', 'add', 'fab', 'type', 'bridge']));
      await checked(run('ip', ['-n', fabric, 'link', 'set', 'fab', 'up']));
    }
    for (let i = 0; i < n; i += 1) {
      const ns = await this.addNs(`n${i}`);
      this.nodeNs[i] = ns;
      await checked(inNs(ns, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']));
      // The bridge made later answers ARP for other nodes' pods (routed, same subnet).
      await checked(inNs(ns, ['sysctl', '-qw', 'net.ipv4.conf.default.proxy_arp=1']));
      if (fabric) {
        const port = `n${i}`;
        await checked(
          run('ip', [
            ...['link', 'add', 'fabric0', 'netns', ns, 'type', 'veth'],
            ...['peer', 'name', port, 'netns', fabric],
          ]),
        );
        await checked(run('ip', ['-n', fabric, 'link', 'set', port, 'master', 'fab', 'up']));
        await checked(
          run('ip', ['-n', ns, 'addr', 'add', `${FABRIC_NET}.${i + 1}/24`, 'dev', 'fabric0']),
        );
        await checked(run('ip', ['-n', ns, 'link', 'set', 'fabric0', 'up']));
      }
      const { tokenFile } = this.nodeApi(i);
      const dir = join(this.stateRoot, this.nodeNames[i]!);
      mkdirSync(dir, { recursive: true });
      writeFileSync(tokenFile, randomBytes(24).toString('hex'), { mode: 0o600 });
      writeFileSync(
        join(dir, '10-pool-monitor.conflist'),
        `${JSON.stringify(this.conflist(i), null, 2)}\n`,
      );
    }
    this.log.info('node namespaces ready', { nodes: this.nodeNs, fabric: fabric ?? null });
  }

  /** The node's conflist: bridge with pool-monitor-cni as its IPAM, asking the node's sidecar. */
  private conflist(index: number): Conflist {
    const { socket, tokenFile } = this.nodeApi(index);
    return {
      cniVersion: '1.0.0',
      name: 'pool-monitor',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipam: {
            type: 'pool-monitor-cni',
            nodeAPI: `unix:${socket}`,
            tokenFile,
            // The kubelet retries a sandbox whose ADD timed out, as a runtime does.
            addTimeoutSeconds: 10,
          },
        },
      ],
    };
  }

  private async addNs(name: string): Promise<string> {
    const ns = `${this.prefix}-${name}`;
    await checked(run('ip', ['netns', 'add', ns]));
    this.namespaces.add(ns);
    await checked(run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']));
    return ns;
  }

  private async removeNs(ns: string): Promise<void> {
    if (!this.namespaces.has(ns)) return;
    const res = await run('ip', ['netns', 'del', ns]);
    if (res.code === 0 || /No such file/.test(res.stderr)) this.namespaces.delete(ns);
    else this.log.warn('namespace not removed', { ns, error: res.stderr.trim() });
  }

  /** The last resort, on process exit: whatever is still there goes, synchronously. */
  private removeAllSync(): void {
    for (const ns of [...this.namespaces].reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // gone already
      }
    }
    this.namespaces.clear();
  }
}

async function checked(p: Promise<Exec>): Promise<void> {
  const res = await p;
  if (res.code !== 0) throw new Error(`--netns: ${res.stderr.trim() || `exit ${res.code}`}`);
}
