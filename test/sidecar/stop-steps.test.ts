// The sidecar's shutdown list: last in, first out; every step named in the
// log; a step that overruns its bound or fails is logged and the rest still run.
import { expect } from 'chai';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import { StopSteps } from '../../src/sidecar/stop-steps.ts';

function capture() {
  const transport = new CaptureTransport();
  return { transport, log: createLogger({ transports: [transport] }) };
}

describe('StopSteps', () => {
  it('runs the steps last pushed first, each logged by name, once', async () => {
    const { transport, log } = capture();
    const ran: string[] = [];
    const steps = new StopSteps();
    steps.push('store', () => void ran.push('store'));
    steps.push('node api', async () => {
      await new Promise((r) => setTimeout(r, 5));
      ran.push('node api');
    });
    steps.push('informers', () => void ran.push('informers'));
    expect(steps.names()).to.deep.equal(['informers', 'node api', 'store']);
    expect(steps.running, 'not stopping before run()').to.equal(false);
    const running = steps.run(log, 1000);
    expect(steps.running, 'stopping as soon as run() begins').to.equal(true);
    await running;
    expect(ran).to.deep.equal(['informers', 'node api', 'store']);
    expect(transport.find('shutdown step').map((r) => r.step)).to.deep.equal(ran);
    await steps.run(log, 1000);
    expect(ran, 'a second run finds nothing left').to.have.length(3);
  });

  it('leaves a step that overruns its bound behind and goes on', async () => {
    const { transport, log } = capture();
    const ran: string[] = [];
    const steps = new StopSteps();
    steps.push('store', () => void ran.push('store'));
    steps.push('hangs', () => new Promise(() => {}));
    const started = Date.now();
    await steps.run(log, 50);
    expect(Date.now() - started).to.be.below(1000);
    expect(ran).to.deep.equal(['store']);
    expect(transport.find('shutdown step timed out').map((r) => r.step)).to.deep.equal(['hangs']);
  });

  it('logs a step that fails, thrown or rejected, and never throws', async () => {
    const { transport, log } = capture();
    const ran: string[] = [];
    const steps = new StopSteps();
    steps.push('store', () => void ran.push('store'));
    steps.push('events', () => Promise.reject(new Error('gone')));
    steps.push('pods', () => {
      throw new Error('boom');
    });
    await steps.run(log, 1000);
    expect(ran).to.deep.equal(['store']);
    expect(transport.find('pods failed')[0]?.error).to.equal('boom');
    expect(transport.find('events failed')[0]?.error).to.equal('gone');
  });
});
