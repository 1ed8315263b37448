// The inventory sync's reads and writes, inside the store's transaction:
// planInventory (inventory-plan.ts) decides from the status and the rows
// read here, and this carries the plan out, in the order its steps depend on.
import { planInventory, type InventoryPlan } from './inventory-plan.ts';
import { dropOrphanContainers, SELECT_IP, type IpRow, type Sql } from './rows.ts';
import type { InventoryChange, IpState } from './types.ts';
import type { BackedContainer } from './validate.ts';

/** Makes the rows follow the validated status (see NodeIpStore.syncInventory). */
export function syncRows(
  sql: Sql,
  containers: readonly BackedContainer[],
  newState: IpState,
  now: () => number,
): InventoryChange {
  const plan = planInventory({
    containers,
    backedContainerIds: (
      sql('SELECT id FROM containers WHERE backed = 1').all() as { id: string }[]
    ).map((row) => row.id),
    rows: sql(`${SELECT_IP} ORDER BY ip_key`).all() as unknown as IpRow[],
    newState,
    now: now(),
  });
  applyInventory(sql, plan);
  return plan.change;
}

/** Carries out an inventory plan, in the order its steps depend on. */
function applyInventory(sql: Sql, plan: InventoryPlan): void {
  for (const nc of plan.containers) {
    sql(
      `INSERT INTO containers (id, subnet_address_space, default_gateway, primary_ip, family, backed)
       VALUES (?, ?, ?, ?, ?, 1)
       ON CONFLICT (id) DO UPDATE SET subnet_address_space = excluded.subnet_address_space,
         default_gateway = excluded.default_gateway, primary_ip = excluded.primary_ip,
         family = excluded.family, backed = 1`,
    ).run(nc.id, nc.subnetAddressSpace, nc.defaultGateway, nc.primaryIP, nc.family ?? null);
  }
  for (const id of plan.unbackContainers)
    sql('UPDATE containers SET backed = 0 WHERE id = ?').run(id);
  for (const r of plan.renames)
    sql('UPDATE ips SET id = ?, nc_id = ?, backed = 1 WHERE id = ?').run(r.id, r.ncId, r.from);
  for (const id of plan.unback) sql('UPDATE ips SET backed = 0 WHERE id = ?').run(id);
  for (const id of plan.remove) sql('DELETE FROM ips WHERE id = ?').run(id);
  for (const r of plan.reback)
    sql('UPDATE ips SET nc_id = ?, backed = 1 WHERE id = ?').run(r.ncId, r.id);
  for (const row of plan.insert) {
    sql(
      `INSERT INTO ips (id, ip, ip_key, family, nc_id, state, backed, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 1, ?)`,
    ).run(row.id, row.ip, row.ip_key, row.family, row.nc_id, row.state, row.updated_at);
  }
  dropOrphanContainers(sql);
}
