// The networks of `embedded --netns` (root only), the README's L2 recipe
// (docs/decisions/0037): each simulated node gets a network namespace
// standing for its host, its uplink `eth0` a port of one bridge in a
// "switch" namespace (one L2 segment, made inside the namespaces: nothing in
// the host's own); the reference macvlan plugin (bridge mode, on eth0) with
// pool-monitor-cni as its IPAM, from manifests/examples/cni/macvlan.conflist
// (written beside the node's state); its sidecar on a unix socket with a
// token of its own. No route is added, by anyone: every pod's address is
// on-link on the segment. A macvlan pod cannot reach its parent, so each
// node reaches its pods through a macvlan of its own on the uplink (`pm0`)
// carrying its NNC's primaryIP of each family, made once the fulfiller gave
// the NNC one.
// The kubelets' CniClient is a NodeRuntime (harness/kubelet/netns-cni.ts): a
// pod namespace and the real plugin chain for each pod. Everything is named
// after this process (pm<pid>-...) so runs never collide, and removed at the
// end - on a second signal or an unexpected exit too (a synchronous last
// resort on process exit).
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  DEFAULT_NAMESPACE,
  dynamicContainers,
  GROUP,
  NNC_PLURAL,
  NNC_VERSION,
  type NodeNetworkConfig,
} from '../../src/nnc/types.ts';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../src/log/logger.ts';
import {
  CNI_DIR,
  NodeRuntime,
  run,
  type Conflist,
  type Exec,
  type NetnsCounters,
} from '../kubelet/netns-cni.ts';

export { MAX_NETNS_NODES, MAX_NETNS_PODS, NETNS_SCENARIO } from './netns-limits.ts';

/** The repository's bin/: the pool-monitor-cni launcher a runtime finds on CNI_PATH. */
const PLUGIN_DIR = fileURLToPath(new URL('../../bin', import.meta.url));
/** The recipe's configuration, as the README documents it. */
const RECIPE = fileURLToPath(
  new URL('../../manifests/examples/cni/macvlan.conflist', import.meta.url),
);
/** The node's side on the segment: a macvlan of the uplink. */
const SHIM = 'pm0';

/** The node's own addresses on the pod subnets (its NNC's primaryIPs, with each subnet's prefix). */
export type NodeAddressOf = (node: string) => Promise<string[]>;

/** Reads the node's NNC: `primaryIP/prefix` of each dynamic container (one per family). */
export function nncPrimaryAddress(kc: KubeConfig): NodeAddressOf {
  const api = kc.makeApiClient(CustomObjectsApi);
  return async (node) => {
    const nnc = (await api
      .getNamespacedCustomObject({
        group: GROUP,
        version: NNC_VERSION,
        namespace: DEFAULT_NAMESPACE,
        plural: NNC_PLURAL,
        name: node,
      })
      .catch(() => undefined)) as NodeNetworkConfig | undefined;
    return (nnc ? dynamicContainers(nnc) : []).flatMap((nc) => {
      const prefix = nc.subnetAddressSpace?.split('/')[1];
      return nc.primaryIP && prefix ? [`${nc.primaryIP}/${prefix}`] : [];
    });
  };
}

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
  for (const plugin of ['bridge', 'macvlan'])
    if (!existsSync(`${CNI_DIR}/${plugin}`))
      return `no ${CNI_DIR}/${plugin} (apt-get install containernetworking-plugins)`;
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
    pingedByFamily: {},
    dadFailed: 0,
    dadWaitMaxMs: 0,
    deleted: 0,
    delFailed: 0,
  };
  private readonly namespaces = new Set<string>();
  private readonly runtimes: NodeRuntime[] = [];
  private readonly nodeNs: string[] = [];
  private podSeq = 0;
  private readonly onExit = (): void => this.removeAllSync();
  private leftBehind: string[] = [];

  /** The addresses on each node's pm0, once it has them (one per family). */
  private readonly shims: (string[] | undefined)[] = [];
  private readonly shimming: Promise<void>[] = [];

  private readonly nodeNames: readonly string[];
  private readonly stateRoot: string;
  private readonly log: Logger;
  private readonly addressOf: NodeAddressOf;

  private constructor(
    nodeNames: readonly string[],
    stateRoot: string,
    log: Logger,
    addressOf: NodeAddressOf,
  ) {
    this.nodeNames = nodeNames;
    this.stateRoot = stateRoot;
    this.log = log;
    this.addressOf = addressOf;
  }

  /**
   * The switch and every node's namespace, conflist, socket place and token;
   * `addressOf` gives a node its own address on the segment (its NNC's
   * primaryIP: nncPrimaryAddress).
   */
  static async create(
    nodeNames: readonly string[],
    stateRoot: string,
    logger: Logger,
    addressOf: NodeAddressOf,
  ): Promise<NodeNetworks> {
    const nets = new NodeNetworks(
      nodeNames,
      stateRoot,
      logger.child({ component: 'netns' }),
      addressOf,
    );
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
      // No route for the pod: the nodes' sides on the segment, before the pings.
      onConfigured: async () => {
        await this.shim(index);
        for (const j of others()) await this.shim(j);
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
      chain: 'macvlan (bridge mode, on eth0) + pool-monitor-cni',
      routing: `none: the nodes' uplinks on one bridge, each node on its NNC's primaryIP (${SHIM})`,
      ...this.counters,
      leftBehind: this.leftBehind,
    };
  }

  private async build(): Promise<void> {
    // The switch: one bridge, a port per node's uplink.
    const sw = await this.addNs('fabric');
    await checked(run('ip', ['-n', sw, 'link', 'add', 'fab', 'type', 'bridge']));
    await checked(run('ip', ['-n', sw, 'link', 'set', 'fab', 'up']));
    for (let i = 0; i < this.nodeNames.length; i += 1) {
      const ns = await this.addNs(`n${i}`);
      this.nodeNs[i] = ns;
      const port = `n${i}`;
      await checked(
        run('ip', [
          ...['link', 'add', 'eth0', 'netns', ns, 'type', 'veth'],
          ...['peer', 'name', port, 'netns', sw],
        ]),
      );
      await checked(run('ip', ['-n', sw, 'link', 'set', port, 'master', 'fab', 'up']));
      await checked(run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']));
      const { tokenFile } = this.nodeApi(i);
      const dir = join(this.stateRoot, this.nodeNames[i]!);
      mkdirSync(dir, { recursive: true });
      writeFileSync(tokenFile, randomBytes(24).toString('hex'), { mode: 0o600 });
      writeFileSync(
        join(dir, '10-pool-monitor.conflist'),
        `${JSON.stringify(this.conflist(i), null, 2)}\n`,
      );
    }
    this.log.info('node namespaces ready', { nodes: this.nodeNs, switch: sw });
  }

  /**
   * The node's side on the segment: pm0, a macvlan (bridge mode) of its
   * uplink, with the node's own addresses (its NNC's primaryIPs, one per
   * family). Made once the NNC has them; they follow the NNC's. One
   * at a time per node (pods are configured concurrently); a failure is
   * logged, and the pings it leaves unanswered say the rest.
   */
  private shim(index: number): Promise<void> {
    const next = (this.shimming[index] ?? Promise.resolve())
      .then(() => this.shimNow(index))
      .catch((err: unknown) => {
        this.log.error('node not on the segment', {
          node: this.nodeNames[index],
          error: (err as Error).message,
        });
      });
    this.shimming[index] = next;
    return next;
  }

  private async shimNow(index: number): Promise<void> {
    const ns = this.nodeNs[index];
    const want = await this.addressOf(this.nodeNames[index] ?? '');
    const had = this.shims[index];
    if (!ns || want.length === 0 || had?.join() === want.join()) return;
    if (had === undefined)
      await checked(
        run('ip', [
          '-n',
          ns,
          'link',
          'add',
          SHIM,
          'link',
          'eth0',
          'type',
          'macvlan',
          'mode',
          'bridge',
        ]),
      );
    for (const gone of (had ?? []).filter((a) => !want.includes(a)))
      await checked(run('ip', ['-n', ns, 'addr', 'del', gone, 'dev', SHIM]));
    // An IPv6 address without duplicate address detection (nodad): the
    // fulfiller gave it to this node alone, and a tentative one would hold
    // the node's first pings back by a second.
    for (const added of want.filter((a) => !(had ?? []).includes(a)))
      await checked(
        run('ip', [
          ...['-n', ns, 'addr', 'add', added, 'dev', SHIM],
          ...(added.includes(':') ? ['nodad'] : []),
        ]),
      );
    await checked(run('ip', ['-n', ns, 'link', 'set', SHIM, 'up']));
    this.shims[index] = want;
    this.log.info('node on the segment', {
      node: this.nodeNames[index],
      shim: SHIM,
      addresses: want,
    });
  }

  /**
   * The node's conflist: the README's recipe (macvlan with pool-monitor-cni)
   * at 1.0.0 for Debian's 1.1.1 plugins, asking the node's sidecar.
   */
  private conflist(index: number): Conflist {
    const { socket, tokenFile } = this.nodeApi(index);
    const recipe = JSON.parse(readFileSync(RECIPE, 'utf8')) as Conflist;
    return {
      cniVersion: '1.0.0',
      name: recipe.name,
      plugins: recipe.plugins.map((p) => ({
        ...p,
        ipam: {
          ...(p.ipam as object),
          nodeAPI: `unix:${socket}`,
          tokenFile,
          // The kubelet retries a sandbox whose ADD timed out, as a runtime does.
          addTimeoutSeconds: 10,
        },
      })),
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
