// The store's schema and its migrations. The database remembers the version it
// is at (table `schema_version`, one row); opening applies every later
// migration in one transaction, and refuses a database written by a newer
// version rather than guess at it. To change the schema, append a migration:
// never edit one that has shipped.
//
// The invariants live in the schema itself, so no code path can break them:
//   - `ips.id` primary key and `ips.ip` UNIQUE: one record per IP;
//   - `state` CHECKed against the four states: exactly one state per IP;
//   - `pod_interface_id` UNIQUE: one IP at most per pod interface;
//   - pod columns set iff state is Assigned: one pod at most per IP, and no
//     pod on an IP that is not Assigned;
//   - `backed = 0` (the NNC no longer has the IP) only while Assigned: no
//     state survives that the NNC does not back, except a pod's IP, kept until
//     the pod lets go of it;
//   - `nc_id` references `containers`: every IP answers with its container's
//     subnet and gateway.

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
];

/** The version a fully migrated database is at. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
