import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { unrefSystemClock } from '../../src/clock/clock.ts';
import { IPSTORE_FILE } from '../../src/ipstore/database.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/ipstore/schema.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { Subject } from 'rxjs';
import type { Observation } from '../../src/scaling/policies/policy.ts';
import { recordPoolHistory } from '../../src/sidecar/history-recorder.ts';

describe('ipstore/pool-history: the idle account kept in the store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'idle-account-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the last saved account across a reopen, without a new schema version', () => {
    const store = openIpStore({ stateDir: dir });
    const record = store.poolHistory().account();
    expect(record.load()).to.equal(undefined);
    record.save(1000, { version: 1, held: 5 });
    record.save(2000, { version: 1, held: 7 });
    store.close();
    const again = openIpStore({ stateDir: dir });
    expect(again.poolHistory().account().load()).to.deep.equal({
      savedAt: 2000,
      state: { version: 1, held: 7 },
    });
    again.close();
    // An older program opens it as before: the schema version is unchanged.
    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    const v = raw.prepare('SELECT max(version) AS v FROM schema_version').get() as { v: number };
    expect(v.v).to.equal(SCHEMA_VERSION);
    raw.close();
  });

  it('a store from before (schema 2, no idle_account table) gains it when first used', () => {
    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    raw.exec('CREATE TABLE schema_version (version INTEGER NOT NULL) STRICT');
    for (const m of MIGRATIONS) raw.exec(m.sql);
    raw.exec(`INSERT INTO schema_version (version) VALUES (${SCHEMA_VERSION})`);
    raw.close();
    const store = openIpStore({ stateDir: dir });
    expect(store.poolHistory().account().load()).to.equal(undefined);
    store.poolHistory().account().save(5, { a: 1 });
    expect(store.poolHistory().account().load()?.state).to.deep.equal({ a: 1 });
    store.close();
  });

  it('the recorder saves the account every minute and on stop; a failing carry costs only the save', () => {
    const store = openIpStore({ memory: true });
    let now = 0;
    let figure = 1;
    const recorder = recordPoolHistory({
      history: store.poolHistory(),
      observations$: new Subject<Observation>(),
      log: silentLogger(),
      flushMs: 3_600_000,
      clock: { ...unrefSystemClock, now: () => now },
      account: { record: store.poolHistory().account(), carry: () => ({ figure }) },
    });
    recorder.flush();
    expect(store.poolHistory().account().load()).to.deep.equal({
      savedAt: 0,
      state: { figure: 1 },
    });
    figure = 2;
    now = 30_000;
    recorder.flush();
    expect(store.poolHistory().account().load()?.state).to.deep.equal({ figure: 1 });
    now = 60_000;
    recorder.flush();
    expect(store.poolHistory().account().load()?.state).to.deep.equal({ figure: 2 });
    figure = 3;
    now = 61_000;
    recorder.stop();
    expect(store.poolHistory().account().load()).to.deep.equal({
      savedAt: 61_000,
      state: { figure: 3 },
    });
    store.close();
  });
});
