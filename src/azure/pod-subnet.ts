// What the backend knows of the pod subnet, for the CSS: its name and prefix
// (one subnets.get), and its free addresses from virtualNetworks.listUsage
// (limit − currentValue), read at most every `usageRefreshMs` and right after
// a SubnetIsFull, and kept current in between by the rounds' own deltas. A
// SubnetIsFull reports the subnet with 0 free for `fullHoldMs`, so the CSS
// says exhausted even when the usage count lags behind — unless a usage read
// sent after that answer finds addresses free: the hold ends at once and
// `onFreed` wakes the nodes left short (issue 45, item 7). While the subnet
// is held full or has nothing free, its usage is read every `fullPollMs`
// (default 5 s), so addresses another workload frees are seen within that.
//
// One PodSubnet is one family of an ARM subnet (a dual-stack subnet has two,
// docs/design/fulfiller.md, "Dual-stack on Azure"). The usage ARM lists for a
// subnet is not published for its IPv6 prefix, so an IPv6 PodSubnet reads
// none: its capacity is the prefix's usable addresses, its free count that
// less what this process's rounds took since it started, and 0 while a
// SubnetIsFull naming its prefix is held.
import type { IpFamily } from '../nnc/family.ts';
import { parseCidr, usableCount } from '../fulfiller/cidr.ts';
import { parseCidr6, usableCount6 } from '../fulfiller/cidr6.ts';
import type { PodSubnetFacts } from './container.ts';
import { gatewayOfPrefix, podSubnetFacts } from './container.ts';
import type { SubnetRef } from './arm/ids.ts';
import type { NicApi } from './nic-api.ts';
import type { SubnetInfo } from '../fulfiller/backend.ts';

export interface PodSubnetOptions {
  api: NicApi;
  /** Which subnet. */
  ref: SubnetRef;
  /** Which of its prefixes (default IPv4). */
  family?: IpFamily;
  now?: () => number;
  usageRefreshMs?: number;
  fullHoldMs?: number;
  /** Usage reads while the subnet is full (default 5 s; 0: none). */
  fullPollMs?: number;
  /** A usage read found addresses free after the subnet was full. */
  onFreed?: () => void;
  /** Where a failed poll is reported. */
  onPollError?: (err: unknown) => void;
}

export class PodSubnet {
  readonly ref: SubnetRef;
  readonly family: IpFamily;
  private readonly api: NicApi;
  private readonly now: () => number;
  private readonly usageRefreshMs: number;
  private readonly fullHoldMs: number;
  private facts?: PodSubnetFacts;
  private usage?: { limit: number; inUse: number; at: number };
  private fullUntil = -Infinity;
  private failedAt = -Infinity;
  private factsInFlight?: Promise<PodSubnetFacts>;
  private usageInFlight?: Promise<void>;
  /** What the rounds took minus what they freed since the read in flight was sent. */
  private deltaDuringRead = 0;
  /** Orders usage reads and SubnetIsFull answers: a read counts only after the answers before it. */
  private seq = 0;
  private fullSeq = -1;
  /** A usage read sent after the last SubnetIsFull found addresses free. */
  private freedAfterFull = false;
  /** What this process's rounds took, net, since it started (an IPv6 prefix's only count). */
  private taken = 0;
  private readonly fullPollMs: number;
  private readonly onFreed: (() => void) | undefined;
  private readonly onPollError: ((err: unknown) => void) | undefined;
  private pollTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: PodSubnetOptions) {
    this.api = options.api;
    this.ref = options.ref;
    this.family = options.family ?? 4;
    this.now = options.now ?? Date.now;
    this.usageRefreshMs = options.usageRefreshMs ?? 30_000;
    this.fullHoldMs = options.fullHoldMs ?? 30_000;
    this.fullPollMs = options.fullPollMs ?? 5_000;
    this.onFreed = options.onFreed;
    this.onPollError = options.onPollError;
  }

  /** The subnet's name and prefix (read once). */
  async get(): Promise<PodSubnetFacts> {
    if (this.facts) return this.facts;
    this.factsInFlight ??= this.api
      .subnet(this.ref)
      .then((s) => (this.facts = podSubnetFacts(s, this.family)))
      .finally(() => (this.factsInFlight = undefined));
    return this.factsInFlight;
  }

  /** Re-reads the usage when it is older than the refresh interval (a failed read waits as long). */
  async refreshIfStale(): Promise<void> {
    const last = Math.max(this.usage?.at ?? -Infinity, this.failedAt);
    if (this.now() - last < this.usageRefreshMs) return;
    await this.refresh();
  }

  /**
   * A usage read sent after now: one in flight (sent before, say, a
   * SubnetIsFull answer) is waited for, then a read is shared only if it was
   * sent after this call.
   */
  async refreshAfter(): Promise<void> {
    const inFlight = this.usageInFlight;
    if (inFlight) await inFlight.catch(() => undefined);
    if (this.usageInFlight && this.usageInFlight !== inFlight) return this.usageInFlight;
    return this.refresh(false);
  }

  /**
   * Re-reads the usage now (sharing a read in flight). `wake`: a read that
   * finds addresses free after the subnet was full calls onFreed (not the
   * read a round makes to size its own retry).
   */
  refresh(wake = true): Promise<void> {
    // No usage is published for an IPv6 prefix: nothing to read.
    if (this.family === 6) return Promise.resolve();
    this.usageInFlight ??= (async () => {
      this.deltaDuringRead = 0;
      const sent = ++this.seq;
      const wasFree = this.full ? 0 : (this.free ?? 0);
      try {
        const u = await this.api.subnetUsage(this.ref);
        const limit = u?.limit ?? -1;
        // Rounds that landed while the read was on its way may or may not be
        // in its count: add them, erring towards less free (the next read
        // corrects it) rather than forgetting addresses that are taken.
        const inUse = (u?.currentValue ?? -1) + this.deltaDuringRead;
        // -1 means "not reported": keep what we had.
        if (limit >= 0 && (u?.currentValue ?? -1) >= 0) {
          this.usage = { limit, inUse: Math.max(0, inUse), at: this.now() };
          const free = this.free ?? 0;
          // Sent after the last SubnetIsFull answer and finding room: the hold is over.
          if (sent > this.fullSeq) this.freedAfterFull = free > 0;
          if (wake && free > 0 && wasFree === 0 && !this.full) this.onFreed?.();
        }
      } catch (err) {
        this.failedAt = this.now();
        throw err;
      } finally {
        this.usageInFlight = undefined;
      }
    })();
    return this.usageInFlight;
  }

  /** The subnet's name in ARM (undefined before it is read); its CSS name is info()'s. */
  get armName(): string | undefined {
    return this.facts?.armName;
  }

  /** Whether the subnet's name and prefix have been read. */
  get known(): boolean {
    return this.facts !== undefined;
  }

  /** The families the subnet has prefixes of (undefined before it is read). */
  get families(): IpFamily[] | undefined {
    return this.facts ? (this.facts.families ?? [4]) : undefined;
  }

  /**
   * Free addresses as last known (undefined before the first usage read; an
   * IPv6 prefix's: undefined, no usage being published for it).
   */
  get free(): number | undefined {
    if (!this.usage) return undefined;
    return Math.max(0, this.usage.limit - this.usage.inUse);
  }

  /** A round took `taken` and gave back `freed` addresses. */
  record(taken: number, freed: number): void {
    this.taken += taken - freed;
    if (this.usage) this.usage.inUse += taken - freed;
    if (this.usageInFlight) this.deltaDuringRead += taken - freed;
  }

  markFull(): void {
    this.fullUntil = this.now() + this.fullHoldMs;
    this.fullSeq = ++this.seq;
    this.freedAfterFull = false;
    this.poll();
  }

  /** Reads the usage every fullPollMs while the subnet is held full or has nothing free. */
  private poll(): void {
    if (this.fullPollMs <= 0 || this.pollTimer || this.family === 6) return;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = undefined;
      void this.refresh()
        .catch((err: unknown) => this.onPollError?.(err))
        .finally(() => {
          if (this.full || this.free === 0) this.poll();
        });
    }, this.fullPollMs);
    this.pollTimer.unref?.();
  }

  /** Stops the poll (the backend stops). */
  stop(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  /** Held full: a SubnetIsFull answer, and no read since found room (or the room was taken). */
  get full(): boolean {
    return this.now() < this.fullUntil && !(this.freedAfterFull && (this.free ?? 0) > 0);
  }

  /** A read since the last SubnetIsFull found room: ask for no more than the free count. */
  get lifted(): boolean {
    return this.now() < this.fullUntil && !this.full;
  }

  /**
   * The subnet for the CSS. Without a usage (its read refused, 403; an IPv6
   * prefix, whose usage is not published) the capacity is the prefix's usable
   * addresses and the free count follows what SubnetIsFull answers tell: all
   * free (an IPv6 prefix: less what this process took), 0 while one is held.
   */
  info(): SubnetInfo[] {
    if (!this.facts) return [];
    const prefix = this.facts.addressPrefix;
    const cidr = this.family === 6 ? parseCidr6(prefix).text : parseCidr(prefix).text;
    const usable =
      this.family === 6 ? Number(usableCount6(parseCidr6(prefix))) : usableCount(parseCidr(prefix));
    const capacity = this.usage?.limit ?? usable;
    const free = this.free ?? (this.family === 6 ? Math.max(0, capacity - this.taken) : capacity);
    return [
      {
        name: this.facts.name,
        family: this.family,
        cidr,
        defaultGateway: gatewayOfPrefix(prefix, this.family),
        capacity,
        free: this.full ? 0 : free,
        armSubnet: { name: this.facts.armName, id: this.facts.id },
      },
    ];
  }
}
