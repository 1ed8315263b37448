// The emulator's network interfaces: every NIC (standalone ones under their
// resource group and name, scale-set instances' under their own keys) and the
// PUTs that change their ipConfigurations, each accepted one starting a
// long-running operation (operations.ts) that holds the NIC until it settles.
import { randomUUID } from 'node:crypto';
import { sameId } from './arm-ids.ts';
import type { ArmObject } from './arm-object.ts';
import { ArmHttpError } from './errors.ts';
import {
  configsOf,
  newEtag,
  newNic,
  nicKey,
  resourceGroupIdOf,
  setProvisioningState,
  type VmOptions,
} from './nic-model.ts';
import { canonical6 } from './ipv6.ts';
import { applyNicPut } from './nic-put.ts';
import type { Ipv6PerNic } from './nic-rules.ts';
import type { ArmOperations, Operation } from './operations.ts';
import type { VirtualNetworks } from './subnets.ts';

export type SubnetFullMode = 'sync' | 'lro';

/** What a NIC PUT is held to besides its subnets' room. */
export interface NicLimits {
  /** `sync`: a PUT that does not fit answers 400 SubnetIsFull; `lro`: its operation ends Failed with that code. */
  subnetFullMode: SubnetFullMode;
  /** Private IP addresses per VM (Azure: 256). */
  perVmCap: number;
  /** Private IP addresses per virtual network (Azure: 65,536). */
  perVnetCap: number;
  /** How many IPv6 ipConfigurations a NIC may hold (nic-rules.ts). */
  ipv6PerNic: Ipv6PerNic;
}

export interface NicBookOptions {
  subscriptionId: string;
  location: string;
  now: () => number;
  vnets: VirtualNetworks;
  operations: ArmOperations;
  limits: NicLimits;
}

export class NetworkInterfaces {
  readonly subscriptionId: string;
  readonly location: string;
  private readonly now: () => number;
  private readonly vnets: VirtualNetworks;
  private readonly operations: ArmOperations;
  private readonly limits: NicLimits;
  private readonly nics = new Map<string, ArmObject>();
  /** Addresses handed out and given back through PUTs, for tests and reports. */
  readonly counts = { taken: 0, freed: 0 };
  /** Called after every accepted NIC write (other-writers.ts follows what comes back). */
  readonly written: Array<(key: string, nic: ArmObject) => void> = [];

  constructor(options: NicBookOptions) {
    this.subscriptionId = options.subscriptionId;
    this.location = options.location;
    this.now = options.now;
    this.vnets = options.vnets;
    this.operations = options.operations;
    this.limits = options.limits;
  }

  /** Files a new NIC of `vm` under `k`, its one ipConfiguration's address taken from `subnetId`. */
  addNicAt(
    k: string,
    nicId: string,
    options: Omit<VmOptions, 'subnetId'>,
    nicName: string,
    subnetId: string,
    primary: boolean,
    vm: string,
  ): { name: string; id: string } {
    const subnet = this.vnets.subnet(subnetId);
    if (!subnet) throw new Error(`unknown subnet ${subnetId}`);
    if (this.nics.has(k)) throw new Error(`NIC ${nicName} exists`);
    const ip = subnet.allocate();
    if (ip === undefined) throw new Error(`subnet ${subnet.name} is full`);
    const nic = newNic({
      nicId,
      nicName,
      location: this.location,
      options,
      subnetId: subnet.id,
      ip,
      primary,
      vm,
    });
    this.nics.set(k, nic);
    return { name: nicName, id: nicId };
  }

  /** ipConfigurations on the VM's NICs other than `except`. */
  private otherConfigsOfVm(vm: string, except: string): number {
    let n = 0;
    for (const [k, nic] of this.nics) {
      if (k === except) continue;
      const of = (nic.properties?.virtualMachine as { id?: string } | undefined)?.id;
      if (sameId(of, vm)) n += ((nic.properties?.ipConfigurations as unknown[]) ?? []).length;
    }
    return n;
  }

  /** Finishes operations whose time has come. */
  settle(): void {
    this.operations.settle((k) => {
      const nic = this.nics.get(k);
      if (nic) setProvisioningState(nic, 'Succeeded');
    });
  }

  /** The NICs whose keys start with `prefix`, as a GET returns them, by key. */
  nicsUnder(prefix: string): ArmObject[] {
    this.settle();
    return [...this.nics.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, nic]) => structuredClone(nic));
  }

  /** The first NIC whose key starts with `prefix`, as stored. */
  firstUnder(prefix: string): { key: string; nic: ArmObject } | undefined {
    for (const [k, nic] of this.nics) if (k.startsWith(prefix)) return { key: k, nic };
    return undefined;
  }

  /** A PUT of the NIC at `k` (a standalone NIC's or a scale-set instance's). */
  putNicAt(
    k: string,
    name: string,
    body: unknown,
    ifMatch: string | undefined,
    kind: 'nic' | 'vm' = 'nic',
    durationMs?: number,
  ): { nic: ArmObject; operationId: string } {
    this.settle();
    const stored = this.nics.get(k);
    if (!stored) {
      throw new ArmHttpError(
        404,
        'NotFound',
        `network interface ${name} not found (the emulator does not create NICs through PUT)`,
      );
    }
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== stored.etag) {
      throw new ArmHttpError(
        412,
        'PreconditionFailed',
        `etag ${ifMatch} does not match the resource's current etag`,
      );
    }
    const running = this.operations.runningOn(k);
    if (running) throw busy(running, this.now(), stored);
    const op = this.operations.begin(k, resourceGroupIdOf(String(stored.id)), kind, durationMs);
    const runs = op.doneAt > this.now();
    const etag = newEtag();
    const state = runs ? 'Updating' : 'Succeeded';
    const vm = (stored.properties?.virtualMachine as { id?: string } | undefined)?.id;
    let nic: ArmObject;
    try {
      const result = applyNicPut(stored, body, {
        nicId: String(stored.id),
        etag,
        provisioningState: state,
        subnetById: (id) => this.vnets.subnet(id),
        ...(vm
          ? {
              vm: { id: vm, otherConfigs: this.otherConfigsOfVm(vm, k), cap: this.limits.perVmCap },
            }
          : {}),
        vnetRoom: (subnet) => {
          const { name: vnet, inUse } = this.vnets.vnetInUse(subnet.id);
          return { name: vnet, room: this.limits.perVnetCap - inUse, cap: this.limits.perVnetCap };
        },
        holderOf: (ip) => this.holderIdOf(ip),
        ipv6PerNic: this.limits.ipv6PerNic,
      });
      nic = result.nic;
      op.undo = { before: structuredClone(stored), moves: result.moves };
      this.counts.taken += result.taken;
      this.counts.freed += result.freed;
      this.nics.set(k, nic);
      for (const f of this.written) f(k, nic);
    } catch (err) {
      if (!(
        err instanceof ArmHttpError &&
        err.code === 'SubnetIsFull' &&
        this.limits.subnetFullMode === 'lro'
      )) {
        throw err;
      }
      // Accepted, but the operation will end Failed and the NIC stays as it was.
      op.failure = err;
      nic = structuredClone(stored);
      setProvisioningState(nic, 'Updating');
    }
    this.operations.add(op, runs);
    if (!runs) this.settle();
    return { nic: structuredClone(nic), operationId: op.id };
  }

  /**
   * Another writer's operation supersedes the one running on the NIC at `k`
   * (ARM cancels the earlier operation; its change does not take effect):
   * the NIC and its addresses go back to what they were before that write,
   * `change` (the later writer's) is applied, the etag moves. False when no
   * operation runs there.
   */
  supersede(k: string, change: (nic: ArmObject) => void = () => {}): boolean {
    this.settle();
    const op = this.operations.runningOn(k);
    if (!op?.undo) return false;
    for (const t of op.undo.moves.taken) t.subnet.release(t.ip);
    for (const f of op.undo.moves.freed) f.subnet.take(f.ip);
    const nic = op.undo.before;
    change(nic);
    nic.etag = newEtag();
    setProvisioningState(nic, 'Succeeded');
    this.nics.set(k, nic);
    this.operations.supersede(op, { id: randomUUID(), name: op.name });
    for (const f of this.written) f(k, nic);
    return true;
  }

  /** An out-of-band change (another tool editing the NIC): `change` edits it, the etag moves. */
  modifyNic(resourceGroup: string, name: string, change: (nic: ArmObject) => void): void {
    const nic = this.nics.get(nicKey(resourceGroup, name));
    if (!nic) throw new Error(`no NIC ${name}`);
    change(nic);
    nic.etag = newEtag();
  }

  /** Every NIC's key (standalone and scale-set instances'), for the other writers. */
  nicKeys(): string[] {
    return [...this.nics.keys()];
  }

  /** A NIC as a GET would return it, by key. */
  readNicAt(k: string): ArmObject | undefined {
    this.settle();
    const nic = this.nics.get(k);
    return nic ? structuredClone(nic) : undefined;
  }

  /**
   * Another writer's PUT of a whole NIC without If-Match, its body `nic` (a
   * read it took earlier): ipConfigurations added since are deleted and their
   * addresses freed. Returns what it removed, or undefined when ARM refused
   * (an operation in progress: the writer tries later).
   */
  overwriteNicAt(
    k: string,
    nic: ArmObject,
    durationMs?: number,
  ): Array<{ name: string; ip: string }> | undefined {
    const before = this.readNicAt(k);
    if (!before) return undefined;
    try {
      this.putNicAt(
        k,
        String(before.name),
        { properties: nic.properties },
        undefined,
        'nic',
        durationMs,
      );
    } catch (err) {
      if (err instanceof ArmHttpError) return undefined;
      throw err;
    }
    const after = new Set(configsOf(this.nics.get(k)).map((c) => String(c.name).toLowerCase()));
    return configsOf(before)
      .filter((c) => !after.has(String(c.name).toLowerCase()))
      .map((c) => ({ name: String(c.name), ip: String(c.properties?.privateIPAddress) }));
  }

  /** The id of the (first) NIC whose ipConfigurations hold `ip`. */
  holderIdOf(ip: string): string | undefined {
    const want = sameAddress(ip);
    for (const nic of this.nics.values()) {
      const configs = (nic.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];
      if (configs.some((c) => want(c.properties?.privateIPAddress))) return String(nic.id);
    }
    return undefined;
  }

  /** Every NIC whose ipConfigurations hold `ip` (more than one would be a double assignment). */
  holdersOf(ip: string): string[] {
    const want = sameAddress(ip);
    const out: string[] = [];
    for (const nic of this.nics.values()) {
      for (const c of (nic.properties?.ipConfigurations as ArmObject[] | undefined) ?? []) {
        if (want(c.properties?.privateIPAddress)) out.push(String(nic.name));
      }
    }
    return out;
  }

  /** The NIC whose VM is `id`, for tests. */
  nicOfVm(id: string): ArmObject | undefined {
    for (const nic of this.nics.values()) {
      const vm = (nic.properties?.virtualMachine as { id?: string } | undefined)?.id;
      if (sameId(vm, id)) return structuredClone(nic);
    }
    return undefined;
  }
}

/** Whether an address is `ip` (an IPv6 one compared as a value, not as text). */
function sameAddress(ip: string): (other: unknown) => boolean {
  const v6 = canonical6(ip);
  return (other) =>
    typeof other === 'string' && (v6 === undefined ? other === ip : canonical6(other) === v6);
}

/**
 * A write to a NIC while another operation updates it: 429 `RetryableError`
 * with the detail `RetryableErrorDueToAnotherOperation` naming the running
 * operation and when to try again, and Retry-After (the body as quoted in
 * cloudfoundry/bosh-azure-cpi-release#179 and hashicorp/terraform#7986,
 * ARM's spelling kept; Azure/azure-rest-api-specs#1124: Network answers 429
 * for "a retryable error", not only for throttling; Azure/azure-libraries-for-net#1001:
 * "Attempt to run an operation on a resource ... in an updating state").
 */
function busy(op: Operation, now: number, nic: ArmObject): ArmHttpError {
  const seconds = Math.max(1, Math.ceil((op.doneAt - now) / 1000));
  const guid = String(nic.properties?.resourceGuid ?? nic.id);
  return new ArmHttpError(
    429,
    'RetryableError',
    'A retryable error occured.',
    { 'retry-after': String(seconds) },
    [
      {
        code: 'RetryableErrorDueToAnotherOperation',
        message: `Operation ${op.name} (${op.id}) is updating resource ${guid}. The call can be retried in ${seconds} seconds.`,
      },
    ],
  );
}
