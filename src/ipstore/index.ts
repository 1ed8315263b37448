// The node IP store's public surface: open it, check it, adapt it for the monitor.
export { openIpStore, SqliteIpStore } from './sqlite-store.ts';
export type { IpStoreOptions } from './sqlite-store.ts';
export { IPSTORE_FILE, IpStoreOpenError } from './database.ts';
export type { Synchronous } from './database.ts';
export { checkStoreInvariants } from './invariants.ts';
export type { InvariantOptions } from './invariants.ts';
export { asPoolIpStore } from './pool-adapter.ts';
export * from './types.ts';
