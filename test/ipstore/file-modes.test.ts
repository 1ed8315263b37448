// The node store holds every pod's IP and interface id: the state dir is
// 0700 and ipstore.db (and its -wal/-shm) 0600 whatever the umask and
// whatever mode a previous version or kubelet's DirectoryOrCreate (0755)
// left. Modes are checked with fs.stat (the tests run as root, so a
// permission-denied test could not fail).
import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IPSTORE_FILE } from '../../src/ipstore/database.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { container } from './helpers.ts';

const mode = (p: string): number => statSync(p).mode & 0o777;

describe('ipstore: file modes of the state dir and the store', () => {
  let dir: string;
  let umask: number;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ipstore-modes-'));
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a new store: dir 0700, ipstore.db and its -wal/-shm 0600 under umask 022', () => {
    chmodSync(dir, 0o755);
    const store = openIpStore({ stateDir: dir });
    store.syncInventory([container(1, [2, 3])]);
    expect(mode(dir).toString(8)).to.equal('700');
    for (const f of [IPSTORE_FILE, `${IPSTORE_FILE}-wal`, `${IPSTORE_FILE}-shm`])
      expect(mode(join(dir, f)).toString(8), f).to.equal('600');
    store.close();
  });

  it('an existing 0644 store is made 0600 when opened', () => {
    const first = openIpStore({ stateDir: dir });
    first.close();
    chmodSync(dir, 0o755);
    chmodSync(join(dir, IPSTORE_FILE), 0o644);
    writeFileSync(join(dir, 'unrelated'), 'x');
    const store = openIpStore({ stateDir: dir });
    expect(mode(join(dir, IPSTORE_FILE)).toString(8)).to.equal('600');
    expect(mode(dir).toString(8)).to.equal('700');
    store.close();
  });
});
