// Existing state dirs open after the dual-stack schema change (version 3):
// a database the schema-2 code wrote (fixtures/schema-v2/ipstore.db, made by
// the code before this change, with the records it listed then in
// listing.json: Assigned, adopted, PendingRelease, PendingProgramming and a
// vanished IP, two containers, the pool history) is migrated in place,
// every record as it was, each address given its family, and the store
// works on: the old pods' addresses are released, new pods get both families
// once the NNC is dual-stack.
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { IPSTORE_FILE } from '../../src/ipstore/database.ts';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/ipstore/schema.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { IpRecord } from '../../src/ipstore/types.ts';
import { container, container6, pod } from './helpers.ts';

const FIXTURE = new URL('./fixtures/schema-v2/', import.meta.url);

describe('ipstore: migration to schema 3 (address families)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ipstore-migrate-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('opens a state dir the schema-2 code wrote, every record as it was', () => {
    copyFileSync(new URL(IPSTORE_FILE, FIXTURE), join(dir, IPSTORE_FILE));
    const listed = JSON.parse(readFileSync(new URL('listing.json', FIXTURE), 'utf8')) as IpRecord[];
    const store = openIpStore({ stateDir: dir });
    expect(store.list()).to.deep.equal(listed);
    expect(store.countsByFamily().map((f) => f.family)).to.deep.equal([4]);
    expect(store.container('nc-1')).to.deep.include({ family: 4 });
    expect(store.container('nc-2')).to.deep.include({ family: 4 });
    expect(store.integrityCheck()).to.deep.equal([]);
    expect(checkStoreInvariants(store)).to.deep.equal([]);
    expect(store.poolHistory().count()).to.equal(2);
    // Pod a held 10.1.0.2 from a CNI request: its release works as before.
    expect(store.release('pod-a-eth0')?.ips.map((r) => r.ip)).to.deep.equal(['10.1.0.2']);
    // The NNC turns dual-stack: a new pod gets both families.
    store.syncInventory([container(1, [2, 3, 4, 5, 6, 7, 8]), container6(1, [2, 3])]);
    expect(store.assign(pod(9)).ips.map((r) => r.ip)).to.have.length(2);
    store.close();

    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    expect(raw.prepare('SELECT version FROM schema_version').all()).to.deep.equal([
      { version: SCHEMA_VERSION },
    ]);
    raw.close();
    const again = openIpStore({ stateDir: dir });
    expect(checkStoreInvariants(again)).to.deep.equal([]);
    again.close();
  });

  it('gives the IPv6 addresses and container of a schema-2 store their family', () => {
    // A schema-2 database built by the shipped migrations themselves.
    const file = join(dir, IPSTORE_FILE);
    const raw = new DatabaseSync(file);
    raw.exec('CREATE TABLE schema_version (version INTEGER NOT NULL) STRICT');
    for (const m of MIGRATIONS.filter((x) => x.version <= 2)) raw.exec(m.sql);
    raw.exec('INSERT INTO schema_version (version) VALUES (2)');
    raw.exec(
      `INSERT INTO containers VALUES ('nc6', 'fd00:1::/112', 'fd00:1::fffe', 'fd00:1::1', 1)`,
    );
    raw.exec(`INSERT INTO ips VALUES ('a', 'fd00:1::2', '${'0'.repeat(4)}', 'nc6', 'Assigned',
      'p-eth0', 'sandbox', 'p', 'default', 1, 1)`);
    raw.exec(`INSERT INTO ips VALUES ('b', 'fd00:1::3', '${'0'.repeat(5)}', 'nc6', 'Available',
      NULL, NULL, NULL, NULL, 1, 1)`);
    raw.close();
    const store = openIpStore({ stateDir: dir });
    expect(store.container('nc6')).to.deep.include({ family: 6 });
    expect(store.countsByFamily()).to.deep.equal([
      {
        family: 6,
        counts: { Available: 1, Assigned: 1, PendingRelease: 0, PendingProgramming: 0 },
      },
    ]);
    expect(checkStoreInvariants(store)).to.deep.equal([]);
    store.close();
  });
});
