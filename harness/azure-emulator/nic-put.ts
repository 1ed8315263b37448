// What a PUT of a whole NIC does to it, as the Microsoft.Network resource
// provider documents it: the body replaces the writable part of the NIC
// (read-only fields such as virtualMachine, macAddress and primary stay),
// ipConfigurations missing from the body are deleted and their addresses
// freed, new Dynamic ones get the subnet's next free address, existing ones
// keep theirs. At most 256 ipConfigurations, exactly one primary. Addresses
// are taken and given back through the subnets; on any failure every change
// is undone before the error is thrown. An ipConfiguration's family is its
// `privateIPAddressVersion` (IPv4 by default): an IPv6 one gets its address
// from its subnet's IPv6 prefix (nic-rules.ts for what ARM refuses of it).
import { sameId } from './arm-ids.ts';
import { ArmHttpError, badRequest } from './errors.ts';
import { canonical6 } from './ipv6.ts';
import type { Ipv6PerNic } from './nic-rules.ts';
import {
  checkIPv6PerNic,
  checkOneSubnet,
  checkPerVm,
  checkPrimaryIsIPv4,
  checkPrimaryKept,
  checkSameAsgs,
  checkVersion,
  noIPv6Prefix,
  versionOf,
  vnetFull,
} from './nic-rules.ts';
import type { ArmObject } from './arm-object.ts';
import type { EmulatedSubnet } from './subnets.ts';

export type { ArmObject };

export const MAX_IP_CONFIGURATIONS = 256;

/** NIC properties the client cannot set: kept from the stored NIC whatever the body says. */
const READ_ONLY_NIC_PROPERTIES = [
  'virtualMachine',
  'macAddress',
  'primary',
  'provisioningState',
  'resourceGuid',
  'vnetEncryptionSupported',
  'hostedWorkloads',
  'tapConfigurations',
  'privateEndpoint',
  'dscpConfiguration',
  'defaultOutboundConnectivityEnabled',
];

const NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?$/;

interface Placed {
  name: string;
  input: ArmObject;
  subnet: EmulatedSubnet;
  address: string;
  fresh: boolean;
}

export interface PutContext {
  nicId: string;
  etag: string;
  provisioningState: string;
  subnetById: (id: string) => EmulatedSubnet | undefined;
  /** The VM's other NICs' ipConfigurations, and the per-VM cap (absent: no VM). */
  vm?: { id: string; otherConfigs: number; cap: number };
  /** Addresses the subnet's virtual network may still hand out. */
  vnetRoom?: (subnet: EmulatedSubnet) => { name: string; room: number; cap: number };
  /** The id of the NIC whose ipConfiguration holds `ip` (for PrivateIPAddressIsAllocated). */
  holderOf?: (ip: string) => string | undefined;
  /** How many IPv6 ipConfigurations a NIC may hold (nic-rules.ts; default `one`, as documented). */
  ipv6PerNic?: Ipv6PerNic;
}

/** Addresses a PUT took and gave back, to undo it (a superseded operation). */
export interface AddressMoves {
  taken: Array<{ subnet: EmulatedSubnet; ip: string }>;
  freed: Array<{ subnet: EmulatedSubnet; ip: string }>;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function configProps(c: ArmObject): Record<string, unknown> {
  return asObject(c.properties) ?? {};
}

function subnetIdOf(c: ArmObject): string | undefined {
  const id = asObject(configProps(c).subnet)?.id;
  return typeof id === 'string' ? id : undefined;
}

/** Validates the body's ipConfigurations; throws 400 with a clear code. */
function validate(body: unknown, ctx: PutContext): ArmObject[] {
  const props = asObject(asObject(body)?.properties);
  const list = props?.ipConfigurations;
  if (!Array.isArray(list) || list.length === 0) {
    throw badRequest(
      'InvalidRequestFormat',
      'properties.ipConfigurations must be a non-empty array',
    );
  }
  if (list.length > MAX_IP_CONFIGURATIONS) {
    throw badRequest(
      'NetworkInterfaceIpConfigurationLimitReached',
      `a network interface can have at most ${MAX_IP_CONFIGURATIONS} ipConfigurations, the request has ${list.length}`,
    );
  }
  const seen = new Set<string>();
  let primaries = 0;
  for (const raw of list) {
    const c = asObject(raw) as ArmObject | undefined;
    const name = c?.name;
    if (!c || typeof name !== 'string' || !NAME.test(name)) {
      throw badRequest(
        'InvalidResourceName',
        `invalid ipConfiguration name ${JSON.stringify(name)}`,
      );
    }
    if (seen.has(name.toLowerCase())) {
      throw badRequest('DuplicateResourceName', `ipConfiguration ${name} appears twice`);
    }
    seen.add(name.toLowerCase());
    const p = configProps(c);
    const subnetId = subnetIdOf(c);
    if (subnetId === undefined || !ctx.subnetById(subnetId)) {
      throw badRequest(
        'InvalidResourceReference',
        `ipConfiguration ${name}: unknown subnet ${subnetId}`,
      );
    }
    checkVersion(c, name);
    if (versionOf(c) === 'IPv6' && !ctx.subnetById(subnetId)!.prefix6) {
      throw noIPv6Prefix(`${ctx.nicId}/ipConfigurations/${name}`, subnetId);
    }
    const method = p.privateIPAllocationMethod ?? 'Dynamic';
    if (method !== 'Dynamic' && method !== 'Static') {
      throw badRequest(
        'InvalidRequestFormat',
        `ipConfiguration ${name}: bad privateIPAllocationMethod`,
      );
    }
    if (method === 'Static' && typeof p.privateIPAddress !== 'string') {
      throw badRequest(
        'InvalidRequestFormat',
        `ipConfiguration ${name}: Static needs privateIPAddress`,
      );
    }
    if (p.primary === true) primaries++;
  }
  checkPrimaryIsIPv4(list as ArmObject[], ctx.nicId);
  if (primaries !== 1) {
    throw badRequest(
      'NetworkInterfaceMustHaveOnePrimaryIpConfiguration',
      `exactly one ipConfiguration must be primary, the request has ${primaries}`,
    );
  }
  return list as ArmObject[];
}

/**
 * Applies `body` to `stored`. Returns the NIC as it now is (new etag from
 * ctx) and the number of addresses taken and freed. Throws ArmHttpError
 * (400, SubnetIsFull included) having changed nothing.
 */
export function applyNicPut(
  stored: ArmObject,
  body: unknown,
  ctx: PutContext,
): { nic: ArmObject; taken: number; freed: number; moves: AddressMoves } {
  const wanted = validate(body, ctx);
  const storedConfigs = (configProps(stored).ipConfigurations as ArmObject[] | undefined) ?? [];
  checkPrimaryKept(storedConfigs, wanted);
  checkOneSubnet(wanted);
  checkSameAsgs(wanted, ctx.nicId);
  checkIPv6PerNic(wanted, ctx.ipv6PerNic ?? 'one', ctx.nicId);
  if (ctx.vm) checkPerVm(ctx.vm.otherConfigs + wanted.length, ctx.vm.cap, ctx.vm.id);
  const old = new Map<string, ArmObject>();
  for (const c of storedConfigs) {
    old.set(String(c.name).toLowerCase(), c);
  }
  const freed: Array<{ subnet: EmulatedSubnet; ip: string }> = [];
  const taken: Array<{ subnet: EmulatedSubnet; ip: string }> = [];
  const undo = (): void => {
    for (const t of taken) t.subnet.release(t.ip);
    for (const f of freed) f.subnet.take(f.ip);
  };
  const kept = new Set<string>();
  const placed: Placed[] = [];
  const pending: Array<{ c: ArmObject; subnet: EmulatedSubnet }> = [];
  // Pass 1: what stays keeps its address; what goes (or moves) gives it back.
  for (const c of wanted) {
    const key = String(c.name).toLowerCase();
    const subnet = ctx.subnetById(subnetIdOf(c)!)!;
    const prev = old.get(key);
    const prevIp = prev ? configProps(prev).privateIPAddress : undefined;
    const p = configProps(c);
    const sameSubnet = prev !== undefined && sameId(subnetIdOf(prev), subnet.id);
    const sameVersion = prev !== undefined && versionOf(prev) === versionOf(c);
    const staticMoved = p.privateIPAllocationMethod === 'Static' && addressText(c) !== prevIp;
    if (sameSubnet && sameVersion && typeof prevIp === 'string' && !staticMoved) {
      kept.add(key);
      placed.push({ name: String(c.name), input: c, subnet, address: prevIp, fresh: false });
    } else {
      pending.push({ c, subnet });
    }
  }
  for (const [key, prev] of old) {
    const ip = configProps(prev).privateIPAddress;
    const subnet = ctx.subnetById(subnetIdOf(prev) ?? '');
    if (!kept.has(key) && typeof ip === 'string' && subnet) {
      subnet.release(ip);
      freed.push({ subnet, ip });
    }
  }
  // The virtual network's cap counts what this PUT adds net of what it frees.
  const first = pending[0];
  if (first && ctx.vnetRoom) {
    const { name, room, cap } = ctx.vnetRoom(first.subnet);
    if (pending.length > room) {
      undo();
      throw vnetFull(name, cap);
    }
  }
  // Pass 2: new (or moved) ipConfigurations get an address of their family.
  for (const { c, subnet } of pending) {
    const p = configProps(c);
    const family = versionOf(c) === 'IPv6' ? 6 : 4;
    let ip: string | undefined;
    if (p.privateIPAllocationMethod === 'Static') {
      ip = addressText(c);
      const holder = ctx.holderOf?.(ip);
      const refused = subnet.take(ip, family);
      if (refused) {
        undo();
        throw staticRefused(refused, `${ctx.nicId}/ipConfigurations/${String(c.name)}`, ip, {
          subnet,
          holder: holder ?? ctx.nicId,
          family,
        });
      }
    } else {
      ip = subnet.allocate(family);
      if (ip === undefined) {
        undo();
        const need = pending.filter((x) => versionOf(x.c) === versionOf(c)).length;
        const prefix = family === 6 ? subnet.prefix6!.text : subnet.addressPrefix;
        throw new ArmHttpError(
          400,
          'SubnetIsFull',
          `Subnet ${subnet.name} with address prefix ${prefix} does not have enough capacity for ${need} IP addresses.`,
        );
      }
    }
    taken.push({ subnet, ip });
    placed.push({ name: String(c.name), input: c, subnet, address: ip, fresh: true });
  }
  const order = new Map(wanted.map((c, i) => [String(c.name).toLowerCase(), i]));
  placed.sort((a, b) => order.get(a.name.toLowerCase())! - order.get(b.name.toLowerCase())!);
  return {
    nic: buildNic(stored, body as ArmObject, placed, ctx),
    taken: taken.length,
    freed: freed.length,
    moves: { taken, freed },
  };
}

/**
 * ARM's 400 for a Static address it cannot give an ipConfiguration:
 * - held by another ipConfiguration: `PrivateIPAddressIsAllocated`, "IP
 *   configuration <id> is using the private IP address <ip> which is already
 *   allocated to resource <NIC id>." (code and message quoted in
 *   daniel-rhoades/acs-engine-terraform#10; the code is listed by Azure's
 *   "Troubleshoot common Azure deployment errors");
 * - one of the subnet's five reserved addresses: `PrivateIPAddressInReservedRange`,
 *   "Private static IP address <ip> falls within reserved IP range of subnet
 *   prefix <prefix>." (hashicorp/terraform-provider-azurerm#4225 quotes ARM's
 *   message; the same Azure page lists the code);
 * - outside the subnet: `PrivateIPAddressNotInSubnet` (the same Azure page:
 *   "The specified IP address is outside of the subnet range"); its message
 *   here is written in the reserved-range one's shape, ARM's own not quoted.
 */
function staticRefused(
  why: 'allocated' | 'reserved' | 'outside',
  configId: string,
  ip: string,
  at: { subnet: EmulatedSubnet; holder: string; family: 4 | 6 },
): ArmHttpError {
  // An IPv6 ipConfiguration's address is judged against the IPv6 prefix.
  const prefix = at.family === 6 ? at.subnet.prefix6!.text : at.subnet.addressPrefix;
  if (why === 'allocated') {
    return badRequest(
      'PrivateIPAddressIsAllocated',
      `IP configuration ${configId} is using the private IP address ${ip} which is already allocated to resource ${at.holder}.`,
    );
  }
  if (why === 'reserved') {
    return badRequest(
      'PrivateIPAddressInReservedRange',
      `Private static IP address ${ip} falls within reserved IP range of subnet prefix ${prefix}.`,
    );
  }
  return badRequest(
    'PrivateIPAddressNotInSubnet',
    `Private static IP address ${ip} does not belong to the range of subnet prefix ${prefix}.`,
  );
}

/** A Static ipConfiguration's address as given, an IPv6 one in ARM's text (RFC 5952). */
function addressText(c: ArmObject): string {
  const given = String(configProps(c).privateIPAddress);
  return versionOf(c) === 'IPv6' ? (canonical6(given) ?? given) : given;
}

function buildNic(
  stored: ArmObject,
  body: ArmObject,
  placed: Placed[],
  ctx: PutContext,
): ArmObject {
  const storedProps = configProps(stored);
  const props: Record<string, unknown> = { ...configProps(body) };
  for (const key of READ_ONLY_NIC_PROPERTIES) {
    delete props[key];
    if (storedProps[key] !== undefined) props[key] = storedProps[key];
  }
  props.provisioningState = ctx.provisioningState;
  props.ipConfigurations = placed.map((pl) => {
    const { provisioningState: _ignored, ...inputProps } = configProps(pl.input);
    return {
      name: pl.name,
      id: `${ctx.nicId}/ipConfigurations/${pl.name}`,
      etag: ctx.etag,
      type: 'Microsoft.Network/networkInterfaces/ipConfigurations',
      properties: {
        ...inputProps,
        privateIPAddress: pl.address,
        privateIPAllocationMethod: inputProps.privateIPAllocationMethod ?? 'Dynamic',
        privateIPAddressVersion: versionOf(pl.input),
        subnet: { id: pl.subnet.id },
        primary: inputProps.primary === true,
        provisioningState: ctx.provisioningState,
      },
    };
  });
  const nic: ArmObject = {
    name: stored.name,
    id: stored.id,
    etag: ctx.etag,
    type: 'Microsoft.Network/networkInterfaces',
    location: stored.location,
    properties: props,
  };
  if (body.tags !== undefined) nic.tags = body.tags;
  return nic;
}
