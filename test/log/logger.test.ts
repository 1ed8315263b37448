import { expect } from 'chai';
import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger } from '../../src/log/logger.ts';

function collect(): { lines: string[]; transport: winston.transport } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, transport: new winston.transports.Stream({ stream }) };
}

describe('logger', () => {
  it('writes one JSON line with level, ts, msg, component first, then fields', () => {
    const { lines, transport } = collect();
    const log = createLogger({
      transports: [transport],
      now: () => new Date('2026-01-02T03:04:05.000Z'),
    });
    log.child({ component: 'monitor' }).info('demand update', { demand: 7 });
    expect(lines).to.have.length(1);
    const line = lines[0] as string;
    expect(Object.keys(JSON.parse(line))).to.deep.equal([
      'level',
      'ts',
      'msg',
      'component',
      'demand',
    ]);
    expect(JSON.parse(line)).to.deep.equal({
      level: 'info',
      ts: '2026-01-02T03:04:05.000Z',
      msg: 'demand update',
      component: 'monitor',
      demand: 7,
    });
  });

  it('keeps multi-line error text on one line', () => {
    const { lines, transport } = collect();
    const log = createLogger({ transports: [transport] });
    log.error('reconcile failed', { error: new Error('a\nb') });
    expect(lines).to.have.length(1);
    expect(JSON.parse(lines[0] as string).error).to.equal('a\nb');
  });

  it('drops records below the configured level', () => {
    const { lines, transport } = collect();
    const log = createLogger({ transports: [transport], level: 'warn' });
    log.info('hidden');
    log.warn('shown');
    expect(lines.map((l) => JSON.parse(l).msg)).to.deep.equal(['shown']);
  });

  it('drops a record no transport takes before formatting it; a level raised later or a transport of its own lets it through', () => {
    const { lines, transport } = collect();
    let clockReads = 0;
    const log = createLogger({
      transports: [transport],
      level: 'warn',
      // The timestamp is the first format step: read once for each line formatted.
      now: () => {
        clockReads += 1;
        return new Date(0);
      },
    });
    const child = log.child({ component: 'nodeapi' });
    child.info('ip assigned', { ip: '10.0.0.4' });
    child.debug('detail');
    log.info('hidden');
    expect(clockReads).to.equal(0);
    child.warn('no available ip');
    expect(clockReads).to.equal(1);

    log.level = 'info';
    child.info('ip assigned', { ip: '10.0.0.5' });
    expect(clockReads).to.equal(2);
    const verbose = collect();
    log.add(Object.assign(verbose.transport, { level: 'debug' }));
    child.debug('detail');
    expect(lines.map((l) => JSON.parse(l).msg)).to.deep.equal(['no available ip', 'ip assigned']);
    expect(verbose.lines.map((l) => JSON.parse(l))).to.deep.equal([
      { level: 'debug', ts: '1970-01-01T00:00:00.000Z', msg: 'detail', component: 'nodeapi' },
    ]);
  });
});

describe('logger after end', () => {
  it('drops a line logged after end() instead of crashing the process', async () => {
    const { transport } = collect();
    const log = createLogger({ transports: [transport] });
    log.end();
    await new Promise((resolve) => setImmediate(resolve));
    log.child({ component: 'late' }).warn('too late');
    await new Promise((resolve) => setImmediate(resolve));
  });
});
