import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { calculateTarget } from '../../src/scaling/target.ts';
import { createAdvisor } from '../../src/sidecar/advice.ts';

const scaler = { batch: 16, buffer: 0.5, max: 250 };
const turns = (n: number): Promise<void> =>
  new Promise((resolve) => {
    let left = n;
    const next = (): void => (left-- <= 0 ? resolve() : void setImmediate(next));
    next();
  });

describe('sidecar/advice (/debug/pool advice from the node history)', () => {
  it('works out the advice in the background from the recorded history, then serves it until it is old', async () => {
    const store = openIpStore({ memory: true });
    const start = 1_700_000_000_000;
    const rows = Array.from({ length: 360 }, (_, i) => {
      const demand = i % 2 === 0 ? 24 : 25;
      return { at: start + i * 10_000, demand, target: calculateTarget(demand, scaler) };
    });
    store.poolHistory().append(rows);
    let now = start + 3600_000;
    const advisor = createAdvisor({
      history: store.poolHistory(),
      scaler: () => scaler,
      log: silentLogger(),
      now: () => now,
    });
    expect(advisor.current().status).to.equal('working');
    await turns(20);
    const view = advisor.current();
    expect(view.status).to.equal('ready');
    expect(view.historySeconds).to.equal(3600);
    expect(view.best?.fits).to.equal(true);
    expect(view.best!.nncWrites).to.be.lessThan(view.current!.nncWrites);
    expect(view.summary).to.match(/would have made/);
    expect(view.assumes).to.match(/fulfils a write in 2 s/);
    now += 60_000;
    expect(advisor.current().computedAt).to.equal(view.computedAt); // not recomputed yet
    advisor.stop();
    store.close();
  });

  it('says when there is not enough history yet', () => {
    const store = openIpStore({ memory: true });
    store.poolHistory().append([{ at: 1000, demand: 1, target: 16 }]);
    const advisor = createAdvisor({
      history: store.poolHistory(),
      scaler: () => scaler,
      log: silentLogger(),
      now: () => 61_000,
    });
    expect(advisor.current()).to.include({ status: 'not enough history', historySeconds: 60 });
    advisor.stop();
    store.close();
  });
});
