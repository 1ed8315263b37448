// The other writers of a node's NIC, as actors that can be switched on:
//
// - cloud-provider-azure: `EnsureHostInPool` → `CreateOrUpdateInterface`
//   reads the NIC, adds it to a load-balancer pool and PUTs the WHOLE NIC it
//   read, without If-Match. ipConfigurations added between its read and its
//   PUT (ours) are deleted and ARM frees their addresses for other NICs.
// - a scale-set reimage / upgrade to the latest model: the instance's NIC is
//   reset to the scale set's model (its primary ipConfiguration only).
//
// Each removal is recorded (`removed`), for tests and the embedded report.
// Deterministic steps (`staleRead` then `staleWrite`, `reimage`) for tests;
// `start()` runs them on timers at random NICs for the embedded cluster.
import type { ArmObject } from './arm-object.ts';
import type { EmulatedNetwork } from './network.ts';

export interface OtherWritersOptions {
  /** cloud-provider-azure: every `everyMs`, one NIC read, then written back `lagMs` later. */
  cloudProvider?: { everyMs: number; lagMs: number };
  /** A scale-set instance reset to its model every `everyMs`. */
  reimage?: { everyMs: number };
  /** Which NIC is picked, among those holding pod ipConfigurations (default Math.random). */
  random?: () => number;
}

export interface RemovedConfig {
  by: 'cloud-provider' | 'reimage' | 'model-upgrade';
  nic: string;
  name: string;
  ip: string;
  at: number;
  /** When a later write put the same name back on the same NIC with the same address. */
  restoredAt?: number;
  /** The NIC's key. */
  key: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const configs = (nic: ArmObject | undefined): ArmObject[] =>
  (nic?.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];

export class OtherWriters {
  readonly removed: RemovedConfig[] = [];
  /** Writes refused (an operation in progress) and so skipped. */
  skipped = 0;
  private readonly network: EmulatedNetwork;
  private readonly options: OtherWritersOptions;
  private readonly random: () => number;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private running = false;

  constructor(network: EmulatedNetwork, options: OtherWritersOptions = {}) {
    this.network = network;
    this.options = options;
    this.random = options.random ?? Math.random;
    network.written.push((key, nic) => this.cameBack(key, nic));
  }

  /** Removed ipConfigurations a later write put back (same name and address). */
  private cameBack(key: string, nic: ArmObject): void {
    const open = this.removed.filter((r) => r.key === key && r.restoredAt === undefined);
    if (open.length === 0) return;
    const now = new Map(configs(nic).map((c) => [String(c.name), c.properties?.privateIPAddress]));
    for (const r of open) if (now.get(r.name) === r.ip) r.restoredAt = Date.now();
  }

  /** cloud-provider-azure's read of a NIC (the key of `network.nicKeys()`). */
  staleRead(key: string): { key: string; nic: ArmObject } | undefined {
    const nic = this.network.readNicAt(key);
    return nic ? { key, nic } : undefined;
  }

  /** ...and its PUT of what it read, without If-Match. Returns how many it removed. */
  staleWrite(read: { key: string; nic: ArmObject }): number {
    const gone = this.network.overwriteNicAt(read.key, read.nic);
    if (!gone) {
      this.skipped++;
      return 0;
    }
    this.record('cloud-provider', read.key, read.nic, gone);
    return gone.length;
  }

  /**
   * Another writer's PUT of the NIC as it is now (cloud-provider-azure
   * putting it in a pool), its operation running `durationMs`: meanwhile
   * ARM answers every other write to the NIC 429 RetryableError. False when
   * ARM refused it (an operation already runs).
   */
  occupy(key: string, durationMs: number): boolean {
    const nic = this.network.readNicAt(key);
    if (!nic) return false;
    const touched = { ...nic, properties: { ...nic.properties } };
    return this.network.overwriteNicAt(key, touched, durationMs) !== undefined;
  }

  /**
   * Another writer's operation supersedes the one running on the NIC (ours):
   * ARM cancels ours, its change never takes effect, the NIC's etag moves.
   */
  supersede(key: string): boolean {
    return this.network.supersede(key, (nic) => {
      nic.tags = { ...(nic.tags as Record<string, string> | undefined), superseded: 'true' };
    });
  }

  /** A reimage (or upgrade to the latest model) of a scale-set instance: its NIC back to its primary. */
  reimage(key: string, by: RemovedConfig['by'] = 'reimage'): number {
    const nic = this.network.readNicAt(key);
    if (!nic) return 0;
    const model = { ...nic, properties: { ...nic.properties } };
    model.properties.ipConfigurations = configs(nic).filter((c) => c.properties?.primary === true);
    const gone = this.network.overwriteNicAt(key, model);
    if (!gone) {
      this.skipped++;
      return 0;
    }
    this.network.modelApplied(key);
    this.record(by, key, nic, gone);
    return gone.length;
  }

  /**
   * A change of a Uniform scale set's model (a new image: a node-image
   * upgrade's first step): by its upgrade policy, its instances are reset
   * to it now (Automatic, Rolling) or stay behind until upgraded (Manual).
   * Returns the ipConfigurations removed.
   */
  changeModel(resourceGroup: string, scaleSet: string): number {
    let n = 0;
    for (const batch of this.network.updateScaleSetModel(resourceGroup, scaleSet)) {
      for (const key of batch) n += this.reimage(key, 'model-upgrade');
    }
    return n;
  }

  /** A manual upgrade of instances to the latest model (all when absent). Returns what it removed. */
  upgradeInstances(resourceGroup: string, scaleSet: string, instanceIds?: string[]): number {
    let n = 0;
    for (const key of this.network.manualUpgrade(resourceGroup, scaleSet, instanceIds)) {
      n += this.reimage(key, 'model-upgrade');
    }
    return n;
  }

  /** Runs the switched-on actors on timers until stop(). */
  start(): void {
    if (this.running) return;
    this.running = true;
    const { cloudProvider, reimage } = this.options;
    if (cloudProvider) {
      this.every(cloudProvider.everyMs, () => {
        const read = this.pick(false);
        const taken = read ? this.staleRead(read) : undefined;
        if (taken) this.later(cloudProvider.lagMs, () => this.staleWrite(taken));
      });
    }
    if (reimage) {
      this.every(reimage.everyMs, () => {
        const key = this.pick(true);
        if (key) this.reimage(key);
      });
    }
  }

  stop(): void {
    this.running = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** A random NIC holding pod ipConfigurations (scale-set instances only with `scaleSet`). */
  private pick(scaleSet: boolean): string | undefined {
    const keys = this.network
      .nicKeys()
      .filter((k) => k.startsWith('vmss:') === scaleSet || !scaleSet)
      .filter((k) => configs(this.network.readNicAt(k)).some((c) => UUID.test(String(c.name))));
    return keys.length ? keys[Math.floor(this.random() * keys.length)] : undefined;
  }

  private record(
    by: RemovedConfig['by'],
    key: string,
    nic: ArmObject,
    gone: Array<{ name: string; ip: string }>,
  ) {
    const at = Date.now();
    for (const g of gone) this.removed.push({ by, key, nic: String(nic.name), ...g, at });
  }

  private every(ms: number, fn: () => void): void {
    this.later(ms, () => {
      fn();
      if (this.running) this.every(ms, fn);
    });
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.running) fn();
    }, ms);
    t.unref?.();
    this.timers.add(t);
  }
}
