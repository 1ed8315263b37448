// Real network namespaces for the CNI tests and bench/cni.ts: names unique
// to the run, everything created recorded so that cleanup() removes it
// even after a failure, and the CNI plugins run as a runtime runs them.
import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { CNI_DIR } from '../../harness/kubelet/netns-cni.ts';
import { killStraySidecars } from '../sidecar/harness.ts';

export const PLUGIN_DIR = fileURLToPath(new URL('../../bin', import.meta.url));
/** The launcher a runtime finds on CNI_PATH in a clone, and the binary it runs. */
export const LAUNCHER = `${PLUGIN_DIR}/pool-monitor-cni`;
export const BINARY = fileURLToPath(new URL('../../dist/pool-monitor-cni', import.meta.url));
/** Where the binary is, as a node's CNI bin directory holds it (the DaemonSet's layout). */
export const INSTALLED_DIR = fileURLToPath(new URL('../../dist', import.meta.url));

// What the real-plugin tests need is what `embedded --netns` needs: one check.
export { whyNoPlugin, whyNoNetns as whyNotReal } from '../../harness/embedded/node-networks.ts';

export function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `ip netns exec NS cmd...`, with its output. */
export function inNs(ns: string, args: string[]): string {
  return sh('ip', ['netns', 'exec', ns, ...args]);
}

export interface CniRun {
  code: number;
  out: string;
  json: Record<string, unknown> | undefined;
  ms: number;
}

/**
 * Runs one CNI plugin as the runtime does, in the node's namespace (where
 * the plugin's host side goes). The main plugin finds pool-monitor-cni in
 * `pluginDir`: bin/ (the repository's launcher) unless told otherwise.
 */
export function runPlugin(
  nodeNs: string,
  plugin: string,
  env: Record<string, string>,
  stdin: string,
  pluginDir = PLUGIN_DIR,
): Promise<CniRun> {
  return execCni(
    'ip',
    ['netns', 'exec', nodeNs, plugin.includes('/') ? plugin : `${CNI_DIR}/${plugin}`],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', CNI_PATH: `${pluginDir}:${CNI_DIR}`, ...env },
    stdin,
  );
}

/**
 * Runs a CNI plugin command with `env` only (as a runtime does) and `stdin`:
 * its exit code (-1 when it did not exit with one: not found, killed), its
 * stdout, parsed when it is JSON, and how long it took.
 */
export function execCni(
  file: string,
  args: string[],
  env: Record<string, string>,
  stdin: string,
): Promise<CniRun> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = execFile(file, args, { env }, (err, stdout) => {
      let json: Record<string, unknown> | undefined;
      try {
        json = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        json = undefined;
      }
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({
        code: typeof code === 'number' ? code : -1,
        out: stdout,
        json,
        ms: performance.now() - started,
      });
    });
    child.stdin?.end(stdin);
  });
}

export interface GcAttachment {
  containerID: string;
  ifname: string;
}

/**
 * The stdin libcni gives one plugin of a list for GC and STATUS
 * (containernetworking/cni libcni/api.go, GCNetworkList and
 * GetStatusNetworkList, through InjectConf in libcni/conf.go): the plugin's
 * own entry with the list's name and cniVersion merged in, and for a GC
 * with args the still-valid attachments under both names (libcni sets both
 * since containernetworking/cni#1103; a nil slice goes as null). A main
 * plugin hands its IPAM this stdin unchanged. `valid` undefined: a GC
 * without args, or STATUS.
 */
export function libcniConf(
  list: { name: string; cniVersion: string },
  entry: object,
  valid?: GcAttachment[] | null,
): string {
  return JSON.stringify({
    ...entry,
    name: list.name,
    cniVersion: list.cniVersion,
    ...(valid === undefined
      ? {}
      : { 'cni.dev/valid-attachments': valid, 'cni.dev/attachments': valid }),
  });
}

/** Namespaces and links made for one run, all removed by cleanup(). */
export class Netns {
  readonly id: string;
  private readonly namespaces: string[] = [];
  private readonly links: string[] = [];

  constructor(tag: string) {
    // Short: interface names have 15 characters at most.
    this.id = `${tag}${(process.pid % 1296).toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
  }

  add(name: string): string {
    const ns = `${this.id}-${name}`;
    sh('ip', ['netns', 'add', ns]);
    this.namespaces.push(ns);
    inNs(ns, ['ip', 'link', 'set', 'lo', 'up']);
    return ns;
  }

  /**
   * A node namespace: forwarding on in both families, and (for the bridge)
   * proxy ARP on new links and proxy NDP for the addresses proxyNdp() names.
   */
  addNode(name: string): string {
    const ns = this.add(name);
    inNs(ns, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    inNs(ns, ['sysctl', '-qw', 'net.ipv4.conf.default.proxy_arp=1']);
    inNs(ns, ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
    inNs(ns, ['sysctl', '-qw', 'net.ipv6.conf.all.proxy_ndp=1']);
    return ns;
  }

  /**
   * A veth pair between two namespaces, addressed /30 each side, and /126
   * each side when `v6` gives the two IPv6 addresses (nodad: the link is
   * the test's, its two ends known distinct).
   */
  link(a: string, aAddr: string, b: string, bAddr: string, v6?: [string, string]): void {
    const ea = `${this.id}x`;
    const eb = `${this.id}y`;
    sh('ip', ['link', 'add', ea, 'type', 'veth', 'peer', 'name', eb]);
    this.links.push(ea);
    sh('ip', ['link', 'set', ea, 'netns', a]);
    sh('ip', ['link', 'set', eb, 'netns', b]);
    for (const [ns, dev, addr] of [
      [a, ea, aAddr],
      [b, eb, bAddr],
    ] as const) {
      inNs(ns, ['ip', 'addr', 'add', `${addr}/30`, 'dev', dev]);
      inNs(ns, ['ip', 'link', 'set', dev, 'up']);
    }
    if (v6) {
      inNs(a, ['ip', '-6', 'addr', 'add', `${v6[0]}/126`, 'dev', ea, 'nodad']);
      inNs(b, ['ip', '-6', 'addr', 'add', `${v6[1]}/126`, 'dev', eb, 'nodad']);
    }
  }

  /** Host routes in `ns` to each address (either family), through `via` (of the same family). */
  routes(ns: string, addresses: string[], via: string): void {
    for (const ip of addresses)
      inNs(ns, [
        ...['ip', ip.includes(':') ? '-6' : '-4', 'route', 'replace'],
        ...[`${ip}/${ip.includes(':') ? 128 : 32}`, 'via', via],
      ]);
  }

  /**
   * Answers neighbour solicitations on `dev` for `addresses` (IPv6's proxy
   * ARP, one entry per address): a pod on a bridge finds another node's
   * pods of its on-link subnet through its node.
   */
  proxyNdp(ns: string, dev: string, addresses: string[]): void {
    for (const ip of addresses) inNs(ns, ['ip', '-6', 'neigh', 'replace', 'proxy', ip, 'dev', dev]);
  }

  forget(ns: string): void {
    sh('ip', ['netns', 'del', ns]);
    this.namespaces.splice(this.namespaces.indexOf(ns), 1);
  }

  /** Removes every namespace (their links and bridges go with them) and stray link. */
  cleanup(): string[] {
    const failed: string[] = [];
    for (const ns of this.namespaces.splice(0).reverse()) {
      try {
        sh('ip', ['netns', 'del', ns]);
      } catch (err) {
        failed.push(`${ns}: ${(err as Error).message}`);
      }
    }
    for (const link of this.links.splice(0)) {
      try {
        sh('ip', ['link', 'del', link]);
      } catch {
        // gone with its namespace
      }
    }
    return failed;
  }

  /** Namespaces of this run still present (none after cleanup). */
  leftovers(): string[] {
    return sh('ip', ['netns', 'list'])
      .split('\n')
      .filter((l) => l.startsWith(`${this.id}-`));
  }
}

/**
 * A real-parts test's teardown: stray sidecars killed, the namespaces and
 * links removed, the temp dir and the cluster gone; fails when a namespace
 * would not go or was left behind.
 */
export async function tearDownRealParts(parts: {
  net: Netns | undefined;
  dir: { remove(): void } | undefined;
  c: { close(): Promise<void> } | undefined;
}): Promise<void> {
  killStraySidecars();
  const failed = parts.net?.cleanup() ?? [];
  const left = parts.net?.leftovers() ?? [];
  parts.dir?.remove();
  await parts.c?.close();
  expect(failed, 'namespaces that would not go').to.deep.equal([]);
  expect(left, 'namespaces left behind').to.deep.equal([]);
}
