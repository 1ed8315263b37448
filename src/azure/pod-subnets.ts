// The pod subnets in use, one PodSubnet (pod-subnet.ts) each, and so one
// ClusterSubnetState each, named after the subnet (its ARM name made a
// Kubernetes name by container.ts cssNameOf, which is also the NC's
// `subnetName`). With --pod-subnet-id there is one, read at
// start; without it (node subnet layout), a node's pod subnet is its own
// NIC's subnet: the subnets of NICs that already hold pod IPs are read at
// start, the others as their first node is served. A 403 on these reads is
// reported, never fatal: without the usage, the CSS follows SubnetIsFull.
// A dual-stack subnet is two PodSubnets, one per prefix, so two
// ClusterSubnetStates (the IPv6 one named with `-ipv6`: container.ts
// cssNameFor); the families every node's pool has are those every pod subnet
// in use has (families()).
import type { Logger } from '../log/logger.ts';
import type { IpFamily } from '../nnc/family.ts';
import { parseSubnetId } from './arm/ids.ts';
import { armErrorKind } from './nic-api.ts';
import type { NicApi } from './nic-api.ts';
import { PodSubnet } from './pod-subnet.ts';
import type { SubnetInfo } from '../fulfiller/backend.ts';

export interface PodSubnetsOptions {
  api: NicApi;
  now?: () => number;
  usageRefreshMs?: number;
  fullHoldMs?: number;
  /** Usage reads while a subnet is full (pod-subnet.ts; default 5 s). */
  fullPollMs?: number;
  /** A usage read found addresses free in a subnet that was full. */
  onFreed?: () => void;
  logger?: Logger;
}

export class PodSubnets {
  private readonly options: PodSubnetsOptions;
  private readonly byId = new Map<string, PodSubnet>();
  /** Names already warned about (not a Kubernetes name, or two subnets share it). */
  private readonly warned = new Set<string>();
  /** Reads in the background only once the backend has started. */
  started = false;

  constructor(options: PodSubnetsOptions) {
    this.options = options;
  }

  /** The family of the subnet with this ARM id (added when first asked for; IPv4 by default). */
  of(id: string, family: IpFamily = 4): PodSubnet {
    const k = `${id.toLowerCase()}#${family}`;
    let subnet = this.byId.get(k);
    if (!subnet) {
      const { api, now, usageRefreshMs, fullHoldMs, fullPollMs } = this.options;
      subnet = new PodSubnet({
        api,
        ref: parseSubnetId(id),
        family,
        ...(now ? { now } : {}),
        ...(usageRefreshMs !== undefined ? { usageRefreshMs } : {}),
        ...(fullHoldMs !== undefined ? { fullHoldMs } : {}),
        ...(fullPollMs !== undefined ? { fullPollMs } : {}),
        onFreed: () => this.options.onFreed?.(),
        onPollError: (err) =>
          this.options.logger?.warn('pod subnet usage read failed', {
            error: (err as Error).message,
          }),
      });
      this.byId.set(k, subnet);
    }
    return subnet;
  }

  /** The family of a subnet when it is known already (no PodSubnet made). */
  peek(id: string, family: IpFamily): PodSubnet | undefined {
    return this.byId.get(`${id.toLowerCase()}#${family}`);
  }

  /**
   * Reads a subnet's name, prefixes and usage now (a 403 is reported, not
   * thrown); a dual-stack subnet's IPv6 prefix too, so its CSS is published
   * from the first term.
   */
  async read(id: string): Promise<void> {
    const subnet = this.of(id);
    await subnet.get().catch((e: unknown) => this.readFailed('subnet', e));
    await subnet.refresh().catch((e: unknown) => this.readFailed('usage', e));
    if (subnet.families?.includes(6)) {
      await this.of(id, 6)
        .get()
        .catch((e: unknown) => this.readFailed('subnet', e));
    }
  }

  /**
   * The families every pod subnet read so far has prefixes of, IPv4 first
   * (IPv4 alone before any is read). A pod subnet in use without an IPv6
   * prefix means no node is served IPv6: the families a pool has are the
   * same on every node.
   */
  families(): IpFamily[] {
    const known = [...this.byId.values()].filter((s) => s.family === 4 && s.families);
    if (known.length === 0) return [4];
    return ([4, 6] as const).filter((f) => known.every((s) => s.families!.includes(f)));
  }

  /**
   * Every subnet in use, for the CSS. Asked often (each CSS update, the
   * resync, metrics scrapes): a usage older than its refresh interval is
   * re-read in the background, so the next answer follows what others took
   * or freed. Two subnets of one name (in two VNets) share one CSS name:
   * the first is published, and a warning says so.
   */
  info(): SubnetInfo[] {
    const out: SubnetInfo[] = [];
    for (const subnet of this.byId.values()) {
      if (this.started) this.refreshInBackground(subnet);
      for (const info of subnet.info()) {
        const arm = subnet.armName;
        if (arm !== undefined && arm !== info.name) this.noteRenamed(arm, info.name);
        if (out.some((o) => o.name === info.name)) {
          this.warnOnce(
            info.name,
            'is shared by two subnets in use: one ClusterSubnetState for both',
          );
          continue;
        }
        out.push(info);
      }
    }
    return out;
  }

  /** Stops every subnet's poll. */
  stop(): void {
    for (const subnet of this.byId.values()) subnet.stop();
  }

  /** A read that ARM refused (403): reported, not fatal. Anything else is. */
  readFailed(what: string, err: unknown): undefined {
    if (armErrorKind(err) !== 'forbidden') throw err;
    this.options.logger?.warn(`pod subnet ${what} read refused (403): check the role assignments`, {
      error: (err as Error).message,
    });
    return undefined;
  }

  private refreshInBackground(subnet: PodSubnet): void {
    const log = this.options.logger;
    subnet.refreshIfStale().catch((err: unknown) => {
      log?.warn('pod subnet usage read failed', { error: (err as Error).message });
    });
    if (!subnet.known) {
      subnet.get().catch((err: unknown) => {
        log?.warn('pod subnet read failed', { error: (err as Error).message });
      });
    }
  }

  /** Said once per subnet: its ARM name is not a Kubernetes name, so its CSS is `css` (container.ts cssNameOf). */
  private noteRenamed(arm: string, css: string): void {
    if (this.warned.has(`renamed ${arm}`)) return;
    this.warned.add(`renamed ${arm}`);
    this.options.logger?.info(`pod subnet ${arm} is ClusterSubnetState ${css}`, {
      subnet: arm,
      clusterSubnetState: css,
      reason: 'the ARM name is not a Kubernetes name (upper case, _ or a bad dot)',
    });
  }

  private warnOnce(name: string, problem: string): void {
    if (this.warned.has(name)) return;
    this.warned.add(name);
    this.options.logger?.warn(`pod subnet name ${problem}`, {
      subnet: name,
      error: 'its ClusterSubnetState is named after the subnet',
    });
  }
}
