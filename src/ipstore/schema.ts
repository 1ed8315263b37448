// The store's schema and its migrations. The database remembers the version it
// is at (table `schema_version`, one row); opening applies every later
// migration in one transaction, and refuses a database written by a newer
// version rather than guess at it. To change the schema, append a migration:
// never edit one that has shipped.
//
// The invariants live in the schema itself, so no code path can break them:
//   - `ips.id` primary key and `ips.ip` UNIQUE: one record per IP;
//   - `state` CHECKed against the four states: exactly one state per IP;
//   - (`pod_interface_id`, `family`) UNIQUE: one IP at most per pod interface
//     and address family (a dual-stack pod holds one of each; version 3);
//   - `family` CHECKed against the address's text: 6 exactly when it has a
//     colon, as node:net tells the families apart;
//   - pod columns set iff state is Assigned: one pod at most per IP, and no
//     pod on an IP that is not Assigned;
//   - `backed = 0` (the NNC no longer has the IP) only while Assigned: no
//     state survives that the NNC does not back, except a pod's IP, kept until
//     the pod lets go of it;
//   - `nc_id` references `containers`: every IP answers with its container's
//     subnet and gateway; a container's `family` is the one its subnet (or
//     primary IP, gateway, addresses) says, NULL while none says.

export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'containers and ips',
    sql: `
      CREATE TABLE containers (
        id TEXT PRIMARY KEY CHECK (id <> ''),
        subnet_address_space TEXT NOT NULL,
        default_gateway TEXT NOT NULL,
        primary_ip TEXT NOT NULL,
        -- 1 while the NNC status lists this container
        backed INTEGER NOT NULL CHECK (backed IN (0, 1))
      ) STRICT;

      CREATE TABLE ips (
        id TEXT PRIMARY KEY CHECK (id <> ''),
        ip TEXT NOT NULL UNIQUE CHECK (ip <> ''),
        -- numeric order of ip (see address.ts)
        ip_key TEXT NOT NULL,
        nc_id TEXT NOT NULL REFERENCES containers (id),
        state TEXT NOT NULL
          CHECK (state IN ('Available', 'Assigned', 'PendingRelease', 'PendingProgramming')),
        pod_interface_id TEXT UNIQUE,
        infra_container_id TEXT,
        pod_name TEXT,
        pod_namespace TEXT,
        backed INTEGER NOT NULL CHECK (backed IN (0, 1)),
        updated_at INTEGER NOT NULL,
        CHECK ((state = 'Assigned') = (pod_interface_id IS NOT NULL)),
        CHECK ((pod_interface_id IS NULL) = (infra_container_id IS NULL)),
        CHECK ((pod_interface_id IS NULL) = (pod_name IS NULL)),
        CHECK ((pod_interface_id IS NULL) = (pod_namespace IS NULL)),
        CHECK (backed = 1 OR state = 'Assigned')
      ) STRICT;

      CREATE INDEX ips_by_state ON ips (state, updated_at, ip_key);
      CREATE INDEX ips_by_container ON ips (nc_id);
    `,
  },
  {
    version: 2,
    description: 'pool history: demand and target over time, for the auto release policy',
    sql: `
      CREATE TABLE pool_history (
        -- ms since the epoch (the monitor's clock)
        at INTEGER NOT NULL,
        demand INTEGER NOT NULL CHECK (demand >= 0),
        target INTEGER NOT NULL CHECK (target >= 0)
      ) STRICT;

      CREATE INDEX pool_history_by_at ON pool_history (at);
    `,
  },
  {
    version: 3,
    description: 'address families: one IP per pod interface and family (dual-stack)',
    // SQLite cannot drop a UNIQUE constraint: ips is rebuilt, rows copied
    // as they are, each with its family read from its text. A container's
    // family is its first address's, else its subnet's text; the first sync
    // after the store opens sets it from the status anyway.
    sql: `
      ALTER TABLE containers ADD COLUMN family INTEGER CHECK (family IN (4, 6));
      UPDATE containers SET family = coalesce(
        (SELECT CASE WHEN instr(ip, ':') > 0 THEN 6 ELSE 4 END FROM ips
          WHERE ips.nc_id = containers.id ORDER BY ip_key LIMIT 1),
        CASE WHEN instr(subnet_address_space, ':') > 0 THEN 6
          WHEN subnet_address_space GLOB '[0-9]*.[0-9]*' THEN 4 END);

      CREATE TABLE ips_v3 (
        id TEXT PRIMARY KEY CHECK (id <> ''),
        ip TEXT NOT NULL UNIQUE CHECK (ip <> ''),
        ip_key TEXT NOT NULL,
        family INTEGER NOT NULL CHECK (family IN (4, 6)),
        nc_id TEXT NOT NULL REFERENCES containers (id),
        state TEXT NOT NULL
          CHECK (state IN ('Available', 'Assigned', 'PendingRelease', 'PendingProgramming')),
        pod_interface_id TEXT,
        infra_container_id TEXT,
        pod_name TEXT,
        pod_namespace TEXT,
        backed INTEGER NOT NULL CHECK (backed IN (0, 1)),
        updated_at INTEGER NOT NULL,
        UNIQUE (pod_interface_id, family),
        CHECK ((family = 6) = (instr(ip, ':') > 0)),
        CHECK ((state = 'Assigned') = (pod_interface_id IS NOT NULL)),
        CHECK ((pod_interface_id IS NULL) = (infra_container_id IS NULL)),
        CHECK ((pod_interface_id IS NULL) = (pod_name IS NULL)),
        CHECK ((pod_interface_id IS NULL) = (pod_namespace IS NULL)),
        CHECK (backed = 1 OR state = 'Assigned')
      ) STRICT;
      INSERT INTO ips_v3 (id, ip, ip_key, family, nc_id, state, pod_interface_id,
          infra_container_id, pod_name, pod_namespace, backed, updated_at)
        SELECT id, ip, ip_key, CASE WHEN instr(ip, ':') > 0 THEN 6 ELSE 4 END, nc_id, state,
          pod_interface_id, infra_container_id, pod_name, pod_namespace, backed, updated_at
        FROM ips;
      DROP TABLE ips;
      ALTER TABLE ips_v3 RENAME TO ips;

      CREATE INDEX ips_by_state ON ips (state, updated_at, ip_key);
      CREATE INDEX ips_by_container ON ips (nc_id);
      CREATE INDEX ips_by_family ON ips (family, state, updated_at, ip_key);
    `,
  },
];

/** The version a fully migrated database is at. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
