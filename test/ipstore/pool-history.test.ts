import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { schedulerClock } from '../../src/clock/scheduler-clock.ts';
import { unrefSystemClock } from '../../src/clock/clock.ts';
import { IPSTORE_FILE } from '../../src/ipstore/database.ts';
import { MIGRATIONS } from '../../src/ipstore/schema.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { Observation } from '../../src/scaling/policies/policy.ts';
import { recordPoolHistory } from '../../src/sidecar/history-recorder.ts';

describe('ipstore/pool-history', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pool-history-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps observations across a reopen, oldest first, and skips rows that are not whole numbers', () => {
    const store = openIpStore({ stateDir: dir });
    const n = store.poolHistory().append([
      { at: 1000, demand: 3, target: 16 },
      { at: 2000.4, demand: 20, target: 32 },
      { at: 3000, demand: -1, target: 16 },
      { at: 4000, demand: 2.5, target: 16 },
    ]);
    expect(n).to.equal(2);
    store.close();
    const again = openIpStore({ stateDir: dir });
    expect(again.poolHistory().load(0)).to.deep.equal([
      { at: 1000, demand: 3, target: 16 },
      { at: 2000, demand: 20, target: 32 },
    ]);
    expect(again.poolHistory().load(1500)).to.deep.equal([{ at: 2000, demand: 20, target: 32 }]);
    expect(again.poolHistory().load(0, 1)).to.deep.equal([{ at: 2000, demand: 20, target: 32 }]);
    again.close();
  });

  it('prunes to the retention window and the row cap, newest kept', () => {
    const store = openIpStore({ memory: true });
    const h = store.poolHistory();
    h.append(Array.from({ length: 10 }, (_, i) => ({ at: i * 1000, demand: i, target: 16 })));
    expect(h.prune(3000, 5)).to.equal(5); // 0,1,2 too old; then 3,4 beyond the cap of 5
    expect(h.load(0).map((o) => o.demand)).to.deep.equal([5, 6, 7, 8, 9]);
    store.close();
  });

  it('a database from before the pool history (schema 1) gains it when opened', () => {
    const raw = new DatabaseSync(join(dir, IPSTORE_FILE));
    raw.exec('CREATE TABLE schema_version (version INTEGER NOT NULL) STRICT');
    raw.exec((MIGRATIONS[0] as { sql: string }).sql);
    raw.exec('INSERT INTO schema_version (version) VALUES (1)');
    raw.close();
    const store = openIpStore({ stateDir: dir });
    expect(store.poolHistory().count()).to.equal(0);
    store.poolHistory().append([{ at: 1, demand: 1, target: 16 }]);
    expect(store.poolHistory().count()).to.equal(1);
    store.close();
  });

  it('the sidecar records what the monitor observes in batches, and the rest on stop', () => {
    const store = openIpStore({ memory: true });
    const observations = new Subject<Observation>();
    const recorder = recordPoolHistory({
      history: store.poolHistory(),
      observations$: observations,
      log: silentLogger(),
      flushMs: 60_000,
      clock: { ...unrefSystemClock, now: () => 10_000 },
    });
    observations.next({ at: 1000, demand: 1, target: 16 });
    observations.next({ at: 2000, demand: 9, target: 32 });
    expect(store.poolHistory().count()).to.equal(0);
    recorder.flush();
    expect(store.poolHistory().count()).to.equal(2);
    observations.next({ at: 3000, demand: 30, target: 48 });
    recorder.stop();
    observations.next({ at: 4000, demand: 1, target: 16 });
    recorder.stop();
    expect(
      store
        .poolHistory()
        .load(0)
        .map((o) => o.target),
    ).to.deep.equal([16, 32, 48]);
    store.close();
  });

  it('writes what is buffered every flushMs on its clock, and no more once stopped', () => {
    const store = openIpStore({ memory: true });
    const observations = new Subject<Observation>();
    const scheduler = new TestScheduler(() => {});
    scheduler.maxFrames = 12_000; // virtual ms run by flush()
    const recorder = recordPoolHistory({
      history: store.poolHistory(),
      observations$: observations,
      log: silentLogger(),
      flushMs: 5_000,
      clock: schedulerClock(scheduler),
    });
    observations.next({ at: 1000, demand: 1, target: 16 });
    scheduler.schedule(() => observations.next({ at: 6000, demand: 9, target: 32 }), 6_000);
    scheduler.schedule(() => {
      expect(store.poolHistory().count()).to.equal(1); // the first at 5 s
      recorder.stop();
      observations.next({ at: 7000, demand: 30, target: 48 });
    }, 7_000);
    scheduler.flush();
    expect(store.poolHistory().count()).to.equal(2);
    expect(scheduler.actions, 'a flush timer left after stop').to.deep.equal([]);
    store.close();
  });
});
