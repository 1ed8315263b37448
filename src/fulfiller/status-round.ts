// A status round for one node: ask the backend for ONE write (add and
// release together), tie the new addresses to the status write as claims in
// the ledger, and write the whole status with optimistic concurrency (a 409
// re-reads and recomputes). A write that fails without saying whether it
// landed leaves its claims, in doubt, in the ledger: a newer version read
// settles them; a read still at the write's base version only once the API
// server's request timeout has passed since: an answered 5xx proves nothing
// (docs/design/fulfiller.md#high-availability). kube-apiserver answers 504
// when its request timeout fires while the write goes on to commit, and
// etcd's "etcdserver: request timed out" comes back as a 500 for a proposal
// that may still be applied; only when the timeout is over can nothing land.
// What the round asks of the fulfiller (the CSS, a wait for the fence) goes
// into its SyncAsks, which the caller applies when the run ends.
import { apiErrorInfo } from '../kube/errors.ts';
import type { NncStatus, NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { NodeSetupError, SubnetFullError, type HeldContainer } from './backend.ts';
import { addressesOf } from './ledger.ts';
import { nodeRef } from './nodes.ts';
import type { NodePlan } from './plan.ts';
import { containerFrom, desiredStatus, jsonEqual, STATUS_SUBNET_FULL } from './status.ts';
import { ConflictLoopError, planFor, scalerFor, subnetsChanged, warn } from './sync-context.ts';
import type { SyncAsks, SyncContext, SyncOutcome } from './sync-context.ts';

/** Whether a status round must call the backend; false when only the status may change. */
export function needsBackend(ctx: SyncContext, nnc: NodeNetworkConfig, plan: NodePlan): boolean {
  if (!plan.container || plan.release.length > 0) return true;
  const name = nnc.metadata.name;
  if (ctx.backend.needsRound?.(nodeRef(name, ctx.node(name)), plan.container)) return true;
  if (plan.allocate === 0) return false;
  // Waiting for a free address: ask the backend again only once it has one.
  if (nnc.status?.status !== STATUS_SUBNET_FULL) return true;
  const subnet = ctx.backend.subnets().find((s) => s.name === plan.container?.subnetName);
  return subnet === undefined || subnet.free > 0;
}

/** The status when the backend is not called: the same container, current scaler and nodeIP. */
export function statusWithoutBackend(
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  plan: NodePlan,
): NncStatus {
  const nc = plan.container!;
  const internalIP = ctx.node(nnc.metadata.name)?.internalIP;
  const container = containerFrom({
    held: {
      primaryIP: nc.primaryIP ?? '',
      subnetName: nc.subnetName ?? '',
      subnetAddressSpace: nc.subnetAddressSpace ?? '',
      defaultGateway: nc.defaultGateway ?? '',
      type: nc.type ?? 'vnet',
      ipAssignments: [...(nc.ipAssignments ?? [])],
    },
    existing: nc,
    newId: ctx.newId,
    ...(internalIP ? { nodeIP: internalIP } : {}),
  });
  return desiredStatus({
    previous: nnc.status,
    container,
    requested: plan.requested,
    subnetShort: nnc.status?.status === STATUS_SUBNET_FULL && plan.allocate > 0,
    scaler: scalerFor(ctx, nnc.metadata.name),
  });
}

/** Reads the NNC fresh (after a 409 or a write in doubt); returns the newest version known. */
export async function reread(
  ctx: SyncContext,
  name: string,
): Promise<NodeNetworkConfig | undefined> {
  const fresh = await ctx.nncApi.get(name);
  ctx.ledger.observe(fresh);
  return ctx.ledger.nnc(name);
}

export async function serveStatus(
  ctx: SyncContext,
  name: string,
  asks: SyncAsks,
): Promise<SyncOutcome> {
  let nnc = ctx.ledger.nnc(name);
  if (nnc && ctx.ledger.inDoubt(name)) {
    // A write in doubt: read afresh, which settles it when the NNC moved
    // on, or when it has not and the request timeout is over.
    nnc = await reread(ctx, name);
    if (nnc && ctx.ledger.settleUnanswered(name, nnc.metadata.resourceVersion, ctx.now()))
      subnetsChanged(asks, true);
  }
  for (let attempt = 0; attempt < ctx.config.conflictRetries && nnc; attempt++) {
    const result = await statusRound(ctx, nnc, asks);
    if (result !== 'conflict') return result;
    nnc = await reread(ctx, name);
  }
  if (!nnc) return 'noop';
  throw new ConflictLoopError(`status of ${name} kept conflicting`);
}

/**
 * Writes a status. `added` are the addresses it adds: claimed against the
 * version the write is based on before it goes out, dropped at once when the
 * server refuses it (4xx), kept while its outcome is unknown.
 */
export async function writeStatus(
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  status: NncStatus,
  added: string[],
): Promise<NodeNetworkConfig | 'conflict'> {
  const name = nnc.metadata.name;
  // Checked with no await before the request goes out.
  try {
    ctx.guard();
  } catch (err) {
    ctx.ledger.unclaim(name, added);
    throw err;
  }
  ctx.ledger.claim(name, added, nnc.metadata.resourceVersion ?? '');
  try {
    const written = await ctx.nncApi.replaceStatus({ ...nnc, status });
    if (written?.metadata?.name === name) ctx.ledger.observe(written);
    ctx.counters.writes++;
    ctx.metrics?.statusWrite('success');
    return written;
  } catch (err) {
    const code = apiErrorInfo(err).statusCode;
    // Refused: it is in no status. Otherwise (5xx, timeout, reset) it may have
    // landed: the claims stay until a newer version of the NNC is read.
    if (code !== undefined && code >= 400 && code < 500) ctx.ledger.unclaim(name, added);
    else if (added.length > 0)
      ctx.ledger.doubt(name, added, nnc.metadata.resourceVersion ?? '', ctx.now(), code);
    if (code === 409) {
      ctx.counters.conflicts++;
      ctx.metrics?.statusWrite('conflict');
      return 'conflict';
    }
    ctx.metrics?.statusWrite('failure');
    throw err;
  }
}

export async function statusRound(
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  asks: SyncAsks,
): Promise<SyncOutcome | 'conflict'> {
  const name = nnc.metadata.name;
  const plan = planFor(ctx, nnc);
  const record = ctx.record(name);
  if (plan.invalid) {
    if (record.invalid !== plan.invalid) {
      record.invalid = plan.invalid;
      ctx.log.warn('rejected NodeNetworkConfig', {
        node: name,
        kind: 'NodeNetworkConfig',
        namespace: nnc.metadata.namespace,
        name,
        resourceVersion: nnc.metadata.resourceVersion,
        field: plan.invalidField,
        error: plan.invalid,
      });
      warn(
        ctx,
        nnc,
        plan.invalidField?.startsWith('status') ? 'InvalidStatus' : 'InvalidSpec',
        plan.invalid,
      );
    }
    return 'invalid';
  }
  delete record.invalid;
  if (!needsBackend(ctx, nnc, plan)) {
    const status = statusWithoutBackend(ctx, nnc, plan);
    if (jsonEqual(status, nnc.status)) return 'noop';
    const written = await writeStatus(ctx, nnc, status, []);
    return written === 'conflict' ? 'conflict' : 'written';
  }
  return backendRound(ctx, nnc, plan, asks);
}

async function backendRound(
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  planned: NodePlan,
  asks: SyncAsks,
): Promise<SyncOutcome | 'conflict'> {
  const name = nnc.metadata.name;
  let plan = planned;
  // A new address (or a first container) may be one a previous leader's late
  // write puts on another NNC: it waits; releases go on (term-fence.ts).
  const why = plan.allocate > 0 || !plan.container ? ctx.allocationWait(name) : undefined;
  if (why !== undefined) {
    asks.waitsFor = why;
    if (!plan.container || plan.release.length === 0) return 'noop';
    plan = { ...plan, allocate: 0 };
  }
  const node = ctx.node(name);
  const scaler = scalerFor(ctx, name);
  ctx.guard();
  let result;
  try {
    result = await ctx.backend.apply(nodeRef(name, node), {
      ...(plan.container ? { container: plan.container } : {}),
      add: plan.allocate,
      remove: plan.release.map((a) => ({ name: a.name, ip: a.ip })),
    });
  } catch (err) {
    if (err instanceof SubnetFullError) return writeSubnetFull(ctx, nnc, scaler, err.message, asks);
    if (err instanceof NodeSetupError && isNewVerdict(ctx, name, err)) {
      ctx.log.warn('node cannot be set up', { node: name, reason: err.reason, error: err.message });
      warn(ctx, nnc, err.reason, err.message);
    }
    throw err;
  }
  delete ctx.record(name).setup;
  const before = addressesOf(plan.container ? [plan.container] : []);
  const fresh = [...addressesOf([{ id: '', ...result.held }])].filter((ip) => !before.has(ip));
  const held = withholdHeldElsewhere(ctx, name, result.held, fresh);
  if (held === undefined) return 'noop';
  const added = fresh.filter((ip) => !(ctx.record(name).withheld ?? []).includes(ip));
  let handedOver = false;
  try {
    const container = containerFrom({
      held,
      ...(plan.container ? { existing: plan.container } : {}),
      newId: ctx.newId,
      ...(node?.internalIP ? { nodeIP: node.internalIP } : {}),
    });
    const status = desiredStatus({
      previous: nnc.status,
      container,
      requested: plan.requested,
      subnetShort: result.short,
      scaler,
    });
    if (jsonEqual(status, nnc.status)) return 'noop';
    handedOver = true;
    const written = await writeStatus(ctx, nnc, status, added);
    if (written === 'conflict') return 'conflict';
    const kept = new Set((plan.container?.ipAssignments ?? []).map((a) => a.name));
    const newIps = held.ipAssignments.filter((a) => !kept.has(a.name)).length;
    ctx.counters.allocated += newIps;
    ctx.counters.released += plan.release.length;
    ctx.metrics?.allocated(newIps);
    ctx.metrics?.released(plan.release.length);
    ctx.log.info('node status written', {
      node: name,
      requested: plan.requested,
      assigned: status.assignedIPCount,
      allocated: newIps,
      released: plan.release.length,
      status: status.status,
    });
    if (result.short && nnc.status?.status !== STATUS_SUBNET_FULL) {
      warn(
        ctx,
        written,
        'SubnetFull',
        `allocated ${newIps} of ${plan.allocate} requested IPs: subnet ${container.subnetName} is full`,
      );
    }
    subnetsChanged(asks, plan.release.length > 0);
    return 'written';
  } finally {
    if (!handedOver) ctx.ledger.unclaim(name, added);
  }
}

/**
 * What the backend holds for the node, less the new addresses that are in
 * use elsewhere: the status of another live NNC, a write in doubt, a deleted
 * node's kept addresses. ARM frees an address as soon as a NIC write drops
 * it, and hands out the lowest free address first, while the status of the
 * node that had it may still list it: another writer removed it from that
 * node's NIC, or that node's own release is between its NIC write and its
 * status write. Writing it here would put one address on two nodes. It stays
 * on the NIC, out of the status, until the ledger frees it, and the node is
 * queued again then (Fulfiller.wakeShortNodes;
 * docs/design/fulfiller.md#operating-the-azure-backend). Undefined: the
 * container's own primary IP is such an address, and no status can be
 * written yet.
 */
function withholdHeldElsewhere(
  ctx: SyncContext,
  name: string,
  held: HeldContainer,
  fresh: readonly string[],
): HeldContainer | undefined {
  const record = ctx.record(name);
  const elsewhere = new Set(fresh.filter((ip) => ctx.ledger.heldByOthers(name, ip)));
  if (elsewhere.size === 0) {
    delete record.withheld;
    return held;
  }
  const withheld = [...elsewhere].sort();
  const newly = withheld.filter((ip) => !record.withheld?.includes(ip));
  if (newly.length > 0) {
    ctx.log.warn('addresses withheld: another NodeNetworkConfig holds them', {
      node: name,
      addresses: withheld.slice(0, 5),
      count: withheld.length,
    });
    ctx.metrics?.withheld(newly.length);
  }
  record.withheld = withheld;
  if (elsewhere.has(held.primaryIP)) return undefined;
  return { ...held, ipAssignments: held.ipAssignments.filter((a) => !elsewhere.has(a.ip)) };
}

/** No container can be set up: say so in the status, and wait for addresses to free up. */
async function writeSubnetFull(
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  scaler: Required<ScalerSpec>,
  reason: string,
  asks: SyncAsks,
): Promise<SyncOutcome | 'conflict'> {
  // The backend just learnt its subnet is full (Azure: SubnetIsFull): the CSS says so.
  subnetsChanged(asks, false);
  const status: NncStatus = {
    ...nnc.status,
    scaler,
    networkContainers: nnc.status?.networkContainers ?? [],
    assignedIPCount: 0,
    status: STATUS_SUBNET_FULL,
  };
  if (jsonEqual(status, nnc.status)) return 'noop';
  const written = await writeStatus(ctx, nnc, status, []);
  if (written === 'conflict') return 'conflict';
  ctx.log.warn('node waits for a free subnet address', { node: nnc.metadata.name, error: reason });
  warn(ctx, nnc, 'SubnetFull', reason);
  return 'written';
}

/**
 * A verdict that waits for a change is reported (log line and Warning Event)
 * once while it stays the same; any other setup failure every time.
 */
function isNewVerdict(ctx: SyncContext, name: string, err: NodeSetupError): boolean {
  if (!err.waitsForChange) return true;
  const record = ctx.record(name);
  const said = `${err.reason}: ${err.message}`;
  if (record.setup === said) return false;
  record.setup = said;
  return true;
}
