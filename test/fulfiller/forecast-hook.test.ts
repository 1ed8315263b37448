// The exhaustion forecast hooks on the backend's subnets() free count, the one
// the CSS publisher reads, so it works for any backend (CIDR, Azure): here a
// backend whose free count is whatever the test says (as the Azure backend's
// comes from the VNet's usage), on a manual clock.
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { FulfillerMetrics } from '../../src/fulfiller/metrics.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { parseProm, value } from '../metrics/prom-text.ts';
import { FakeClock } from './fake-clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { newFulfiller } from './harness.ts';

describe('fulfiller: exhaustion forecast on /metrics from any backend', () => {
  it('reads free addresses from subnets() and forecasts at the net rate of the window', async () => {
    const clock = new FakeClock();
    const metrics = new FulfillerMetrics({ defaultMetrics: false });
    let free = 1000;
    const { fulfiller } = newFulfiller({
      cluster: new FakeCluster(),
      clock,
      config: makeFulfillerConfig({ subnet: '10.240.0.0/24' }),
      logger: silentLogger(),
      metrics,
      wrap: (cidr) => ({
        kind: 'usage-reporting',
        subnets: () => cidr.subnets().map((s) => ({ ...s, name: 'pods', capacity: 4000, free })),
        families: () => cidr.families(),
        apply: (node, change) => cidr.apply(node, change),
        releaseAll: (node, container) => cidr.releaseAll(node, container),
      }),
    });
    const scrape = async () =>
      value(
        parseProm(await metrics.render()),
        'pool_monitor_fulfiller_subnet_exhaustion_forecast_seconds',
        { subnet: 'pods' },
      );
    const hasForecast = async () =>
      parseProm(await metrics.render()).samples.some(
        (s) => s.name === 'pool_monitor_fulfiller_subnet_exhaustion_forecast_seconds',
      );
    expect(await hasForecast()).to.equal(false); // no minute of history yet
    await clock.advance(60_000);
    expect(await scrape()).to.equal(Infinity); // steady: not filling up
    free = 880; // 120 addresses in 2 min: 1/s
    await clock.advance(60_000);
    expect(await scrape()).to.equal(880);
    expect(
      value(parseProm(await metrics.render()), 'pool_monitor_fulfiller_subnet_free_ips', {
        subnet: 'pods',
      }),
    ).to.equal(880);
    free = 1500; // released more than was taken: +Inf again
    await clock.advance(1000);
    expect(await scrape()).to.equal(Infinity);
    await fulfiller.stop();
  });
});
