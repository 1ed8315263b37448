// The stand-ins of the node agent's lean client (src/kube/lean/hooks.ts):
// which imports of @kubernetes/client-node they replace, and that the
// serializer stand-in refuses what it cannot pass through unchanged.
import { expect } from 'chai';
import { standIn } from '../../src/kube/lean/hooks.ts';
import { ObjectSerializer } from '../../src/kube/lean/serializer.ts';

const DIST = 'file:///app/node_modules/@kubernetes/client-node/dist/';

describe('the lean client stand-ins', () => {
  it('replaces config.js’s generated index and cache.js’s serializer, nothing else', () => {
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

  it('passes selectors through as the package does, and refuses anything else', () => {
    expect(ObjectSerializer.serialize('spec.nodeName=n1', 'string')).to.equal('spec.nodeName=n1');
    expect(ObjectSerializer.serialize(undefined, 'string')).to.equal(undefined);
    expect(() => ObjectSerializer.serialize(3, 'number')).to.throw(/serializes strings only/);
    expect(() => ObjectSerializer.serialize({}, 'string')).to.throw(/serializes strings only/);
  });
});
