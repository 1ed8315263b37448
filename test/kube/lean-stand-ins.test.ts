// The stand-ins of the node agent's lean client (src/kube/lean/hooks.ts):
// which imports of @kubernetes/client-node they replace, and that the
// serializer stand-in refuses what it cannot pass through unchanged, and that
// undici's stand-in hands out the library's own classes.
import { expect } from 'chai';
import { standIn } from '../../src/kube/lean/hooks.ts';
import { ObjectSerializer } from '../../src/kube/lean/serializer.ts';
import * as leanUndici from '../../src/kube/lean/undici.ts';
import * as undici from 'undici';

const DIST = 'file:///app/node_modules/@kubernetes/client-node/dist/';

describe('the lean client stand-ins', () => {
  it('replaces config.js’s generated index and cache.js’s serializer, nothing else of theirs', () => {
    expect(standIn('./gen/index.js', `${DIST}config.js`)).to.match(
      /\/src\/kube\/lean\/gen-index\.ts$/,
    );
    expect(standIn('./serializer.js', `${DIST}cache.js`)).to.match(
      /\/src\/kube\/lean\/serializer\.ts$/,
    );
    expect(standIn('./serializer.js', `${DIST}index.js`)).to.equal(undefined);
    expect(standIn('./gen/index.js', `${DIST}index.js`)).to.equal(undefined);
    expect(standIn('./gen/index.js', 'file:///app/src/config.js')).to.equal(undefined);
    expect(standIn('./gen/index.js', undefined)).to.equal(undefined);
  });

  it('gives the package’s imports of undici its pools and fetch alone', () => {
    for (const file of ['config.js', 'watch.js', 'gen/http/isomorphic-fetch.js']) {
      expect(standIn('undici', `${DIST}${file}`), file).to.match(/\/src\/kube\/lean\/undici\.ts$/);
    }
    expect(standIn('undici', `${DIST}cache.js`)).to.equal(undefined);
    expect(standIn('undici', 'file:///app/src/kube/shared-dispatcher.ts')).to.equal(undefined);
    expect(standIn('undici/lib/dispatcher/agent.js', `${DIST}config.js`)).to.equal(undefined);
  });

  it('hands out undici’s own Agent and ProxyAgent, with the dispatcher methods its index adds', async () => {
    expect(leanUndici.Agent).to.equal(undici.Agent);
    expect(leanUndici.ProxyAgent).to.equal(undici.ProxyAgent);
    expect(leanUndici.fetch).to.be.a('function');
    const agent = new leanUndici.Agent();
    try {
      for (const method of ['request', 'stream', 'pipeline', 'upgrade', 'connect'] as const) {
        expect(agent[method], method).to.be.a('function');
      }
    } finally {
      await agent.close();
    }
  });

  it('passes selectors through as the package does, and refuses anything else', () => {
    expect(ObjectSerializer.serialize('spec.nodeName=n1', 'string')).to.equal('spec.nodeName=n1');
    expect(ObjectSerializer.serialize(undefined, 'string')).to.equal(undefined);
    expect(() => ObjectSerializer.serialize(3, 'number')).to.throw(/serializes strings only/);
    expect(() => ObjectSerializer.serialize({}, 'string')).to.throw(/serializes strings only/);
  });
});
