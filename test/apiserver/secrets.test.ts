// The API server's own secrets: the admin token is compared in constant time
// (equal-length digests through crypto.timingSafeEqual), and a server that
// lets anonymous users in, or lets every user write (AlwaysAllow), says so
// at start in a warning a person reading the log cannot miss.
import { expect } from 'chai';
import { Writable } from 'node:stream';
import winston from 'winston';
import { sameSecret } from '../../src/secrets/same-secret.ts';
import { startApiServer } from '../../harness/apiserver/server.ts';
import { createLogger } from '../../src/log/logger.ts';

function collect(): {
  lines: () => Record<string, unknown>[];
  logger: ReturnType<typeof createLogger>;
} {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      out.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ transports: [new winston.transports.Stream({ stream })] });
  return { lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>), logger };
}

describe('apiserver: secrets compared in constant time', () => {
  it('sameSecret: equal, different, different lengths, empty', () => {
    expect(sameSecret('abc', 'abc')).to.equal(true);
    expect(sameSecret('abc', 'abd')).to.equal(false);
    expect(sameSecret('abc', 'abcd')).to.equal(false);
    expect(sameSecret('', 'abc')).to.equal(false);
  });
});

describe('apiserver: an open server warns at start', function () {
  this.timeout(20_000);
  const warnings = async (opts: Parameters<typeof startApiServer>[0]) => {
    const { lines, logger } = collect();
    const s = await startApiServer({ ...opts, logger });
    await s.close();
    return lines().filter((l) => l.level === 'warn' && l.msg === 'api server is open');
  };

  it('AlwaysAllow with anonymous requests: anyone, without credentials, may write anything', async () => {
    const w = await warnings({});
    expect(w).to.have.length(1);
    expect(w[0]?.risk).to.equal(
      'anonymous requests are allowed and --authorization-mode AlwaysAllow lets every user, anonymous included, read and write everything; use --token-auth-file and --authorization-mode RBAC',
    );
  });

  it('RBAC with anonymous requests: anonymous users get only what RBAC grants system:anonymous', async () => {
    const w = await warnings({ authorizationMode: 'RBAC', anonymous: true });
    expect(w).to.have.length(1);
    expect(w[0]?.risk).to.equal(
      'anonymous requests are allowed (as system:anonymous, with what RBAC grants system:unauthenticated); use --anonymous false',
    );
  });

  it('RBAC without anonymous requests: no warning', async () => {
    expect(await warnings({ authorizationMode: 'RBAC', anonymous: false })).to.deep.equal([]);
  });
});
