import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { IPSTORE_FILE, IpStoreOpenError } from '../../src/ipstore/database.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { container, pod } from './helpers.ts';

describe('ipstore/open (file store)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ipstore-open-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates ipstore.db in WAL mode with synchronous=FULL and keeps state across reopen', () => {
    const store = openIpStore({ stateDir: dir });
    expect(store.location).to.equal(join(dir, IPSTORE_FILE));
    expect(store.durability()).to.deep.equal({ journalMode: 'wal', synchronous: 'FULL' });
    store.syncInventory([container(1, [2, 3])]);
    const held = store.assign(pod(1));
    store.markPendingRelease(1);
    store.close();

    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    expect(raw.prepare('PRAGMA journal_mode').get()).to.deep.include({ journal_mode: 'wal' });
    expect(raw.prepare('SELECT version FROM schema_version').all()).to.have.length(1);
    raw.close();

    const again = openIpStore({ stateDir: dir });
    expect(again.list(['Assigned'])).to.deep.equal(held.ips);
    expect(again.pendingReleaseIds()).to.have.length(1);
    expect(checkStoreInvariants(again)).to.deep.equal([]);
    again.close();
  });

  it('lets a second connection (an inspection tool) see committed state', () => {
    const store = openIpStore({ stateDir: dir });
    const reader = openIpStore({ stateDir: dir });
    store.syncInventory([container(1, [2, 3])]);
    store.assign(pod(1));
    expect(reader.counts()).to.include({ Assigned: 1, Available: 1 });
    expect(checkStoreInvariants(reader)).to.deep.equal([]);
    reader.close();
    store.close();
  });

  it('lists what another connection committed since its last list, and its own rolled-back changes undone', () => {
    const store = openIpStore({ stateDir: dir });
    const other = openIpStore({ stateDir: dir });
    store.syncInventory([container(1, [2, 3])]);
    expect(store.list().map((r) => r.state)).to.deep.equal(['Available', 'Available']);
    // A write by another connection (another process on the same file).
    const held = other.assign(pod(1));
    expect(store.list(['Assigned'])).to.deep.equal(held.ips);
    expect(other.list(['Assigned'])).to.deep.equal(held.ips);
    other.release(pod(1).podInterfaceID);
    expect(store.list(['Assigned'])).to.deep.equal([]);
    // A change of its own rolled back: the list is the rows as they are.
    expect(() => store.restorePendingRelease(['not an id'])).to.not.throw();
    expect(() => store.assign({ ...pod(2), desiredIPAddresses: ['10.9.9.9'] })).to.throw();
    expect(store.list().map((r) => r.state)).to.deep.equal(['Available', 'Available']);
    store.assign(pod(2));
    expect(other.list(['Assigned'])).to.have.length(1);
    other.close();
    store.close();
    expect(() => store.list()).to.throw(/closed/);
  });

  it('exports its public surface from index.ts', async () => {
    const api = await import('../../src/ipstore/index.ts');
    for (const name of [
      'openIpStore',
      'SqliteIpStore',
      'checkStoreInvariants',
      'asPoolIpStore',
      'IpStoreOpenError',
    ]) {
      expect(api, name).to.have.property(name);
    }
    expect(api.IPSTORE_FILE).to.equal('ipstore.db');
  });

  it('uses synchronous FULL unless told NORMAL', () => {
    const store = openIpStore({ stateDir: dir, synchronous: 'NORMAL' });
    expect(store.durability().synchronous).to.equal('NORMAL');
    store.close();
    expect(() => openIpStore({ stateDir: dir, synchronous: 'OFF' as 'FULL' })).to.throw(
      IpStoreOpenError,
    );
  });

  it('refuses a missing state dir, a file as state dir, and bad option mixes', () => {
    expect(() => openIpStore({ stateDir: join(dir, 'missing') })).to.throw(
      IpStoreOpenError,
      /does not exist/,
    );
    writeFileSync(join(dir, 'file'), 'x');
    expect(() => openIpStore({ stateDir: join(dir, 'file') })).to.throw(
      IpStoreOpenError,
      /not a directory/,
    );
    expect(() => openIpStore({})).to.throw(IpStoreOpenError, /needs a state dir/);
    expect(() => openIpStore({ stateDir: dir, memory: true })).to.throw(
      IpStoreOpenError,
      /not both/,
    );
  });

  it('refuses an unwritable state dir', () => {
    const locked = join(dir, 'locked');
    mkdirSync(locked);
    // Root writes anywhere but on a read-only file system: one is mounted there.
    const root = process.getuid?.() === 0;
    if (root) execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'ipstore-test', locked]);
    else chmodSync(locked, 0o500);
    try {
      expect(() => openIpStore({ stateDir: locked })).to.throw(IpStoreOpenError, /not writable/);
    } finally {
      if (root) execFileSync('umount', [locked]);
      else chmodSync(locked, 0o700);
    }
  });

  it('refuses a state dir whose ipstore.db is a directory', () => {
    mkdirSync(join(dir, IPSTORE_FILE));
    expect(() => openIpStore({ stateDir: dir })).to.throw(IpStoreOpenError, /cannot open IP store/);
  });

  it('refuses a corrupt database file with a clear message and leaves it alone', () => {
    const garbage = 'this is not a sqlite database\n'.repeat(200);
    writeFileSync(join(dir, IPSTORE_FILE), garbage);
    expect(() => openIpStore({ stateDir: dir })).to.throw(
      IpStoreOpenError,
      /corrupt or not a database/,
    );
  });

  it('refuses a damaged database page', () => {
    const store = openIpStore({ stateDir: dir });
    store.syncInventory([
      container(
        1,
        Array.from({ length: 200 }, (_, i) => i + 2),
      ),
    ]);
    store.close();
    const file = join(dir, IPSTORE_FILE);
    const raw = new DatabaseSync(file);
    const pages = (raw.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
    raw.close();
    expect(pages).to.be.greaterThan(2);
    // scribble over every page but the first (which holds the file header)
    const head = readFileSync(file).subarray(0, 4096);
    writeFileSync(file, Buffer.concat([head, Buffer.alloc(4096 * (pages - 1), 0xab)]));
    expect(() => openIpStore({ stateDir: dir })).to.throw(IpStoreOpenError, /corrupt/);
  });

  it('refuses a database that is not an IP store', () => {
    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    raw.exec('CREATE TABLE other (x)');
    raw.close();
    expect(() => openIpStore({ stateDir: dir })).to.throw(
      IpStoreOpenError,
      /not an IP store database/,
    );
  });

  it('refuses a database from a newer schema version', () => {
    openIpStore({ stateDir: dir }).close();
    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    raw.exec('UPDATE schema_version SET version = 999');
    raw.close();
    expect(() => openIpStore({ stateDir: dir })).to.throw(
      IpStoreOpenError,
      /schema version 999, newer/,
    );
  });
});
