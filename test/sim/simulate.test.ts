import { expect } from 'chai';
import { CaptureTransport } from '../../src/log/capture.ts';
import { runSimulation } from '../../src/sim/simulate.ts';
import { parseTraceCsv } from '../../src/sim/trace.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

describe('sim/runSimulation', () => {
  it('scales up for a burst, back down after it, through the real monitor and store', async () => {
    const logs = new CaptureTransport();
    const { summary, samples } = await runSimulation({
      trace: parseTraceCsv('0,4\n60,120\n600,10', 'burst.csv'),
      scaler,
      releaseDelaySeconds: 0,
      fulfilDelaySeconds: 5,
      logTransport: logs,
    });
    // 4 pods → 16 IPs; 120 → 16 × ceil(0.5 + 7.5) = 128; 10 → 16 × ceil(0.5 + 0.625) = 32.
    const requests = logs.find('scaled pool').map((r) => r.request);
    expect(requests).to.include.members([128, 32]);
    expect(summary.peakPool).to.equal(128);
    expect(samples.at(-1)?.allocated).to.equal(32);
    expect(summary.ipsAllocated - summary.ipsReleased).to.equal(32);
    // Pods wait only while the control plane fulfils the scale-up (5 s, plus throttling).
    expect(summary.secondsUnderProvisioned).to.be.greaterThan(0).and.at.most(10);
    expect(summary.nncWrites).to.be.at.least(2);
    // Every pod got an IP: the first 16 at once, the 104 others after the scale-up's 5 s.
    expect(summary.pods).to.equal(120);
    expect(summary.podIpRefusals).to.equal(104);
    expect(summary.podWaitP50Seconds).to.equal(5);
    expect(summary.podWaitMaxSeconds).to.equal(5);
  });

  it('holds a lower target back for --release-delay, so a short dip writes nothing', async () => {
    const trace = parseTraceCsv('0,40\n300,5\n330,40', 'dip.csv');
    const undamped = await runSimulation({
      trace,
      scaler,
      releaseDelaySeconds: 0,
      fulfilDelaySeconds: 1,
    });
    const damped = await runSimulation({
      trace,
      scaler,
      releaseDelaySeconds: 120,
      fulfilDelaySeconds: 1,
    });
    expect(undamped.summary.ipsReleased).to.be.greaterThan(0);
    expect(damped.summary.ipsReleased).to.equal(0);
    expect(damped.summary.nncWrites).to.be.lessThan(undamped.summary.nncWrites);
  });

  it('uses batch 1 and buffer 1 while the subnet is exhausted', async () => {
    const { samples } = await runSimulation({
      trace: parseTraceCsv('0,10\n60,50,true', 'exhausted.csv'),
      scaler,
      releaseDelaySeconds: 0,
      fulfilDelaySeconds: 1,
    });
    expect(samples.at(-1)?.requested).to.equal(51);
  });

  it('gives the same figures on every run', async () => {
    const trace = parseTraceCsv('0,3\n30,70\n90,20\n200,90\n260,0', 'r.csv');
    const a = await runSimulation({ trace, scaler, releaseDelaySeconds: 0, fulfilDelaySeconds: 3 });
    const b = await runSimulation({ trace, scaler, releaseDelaySeconds: 0, fulfilDelaySeconds: 3 });
    expect(a.summary).to.deep.equal(b.summary);
  });
});
