// The fast path of a YAML request body that is JSON (http.ts jsonInYaml):
// wherever it answers, its value is the YAML parser's; where the two parsers
// differ (duplicate keys) it leaves the body to the YAML parser.
import { expect } from 'chai';
import fc from 'fast-check';
import YAML from 'yaml';
import { jsonInYaml, parseBody } from '../../harness/apiserver/http.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../../src/nnc/types.ts';

const yamlValue = (text: string): unknown => {
  const doc = YAML.parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) throw new Error(doc.errors[0]?.message);
  return doc.toJS();
};

describe('apiserver: JSON bodies sent as YAML', () => {
  it('parse as the YAML parser parses them, whenever the fast path answers', () => {
    const objects = fc.dictionary(fc.string(), fc.jsonValue());
    fc.assert(
      fc.property(objects, fc.integer({ min: 0, max: 2 }), (obj, indent) => {
        const text = JSON.stringify(obj, null, indent);
        const fast = jsonInYaml(text);
        let slow: unknown;
        try {
          slow = yamlValue(text);
        } catch {
          // The YAML parser refuses it: so must the fast path, by not answering.
          expect(fast).to.equal(undefined);
          return;
        }
        if (fast !== undefined) expect(fast).to.deep.equal(slow);
      }),
      { numRuns: 500 },
    );
  });

  it('answers for what client-node sends: an apply patch as JSON', () => {
    const body = JSON.stringify({
      apiVersion: `${GROUP}/${NNC_VERSION}`,
      kind: NNC_KIND,
      metadata: { name: 'node-1', namespace: 'kube-system', labels: { 'a/b': 'c:d' } },
      spec: { requestedIPCount: 48, ipsNotInUse: ['x', 'y'] },
    });
    expect(jsonInYaml(body)).to.deep.equal(JSON.parse(body));
    expect(parseBody(Buffer.from(body), 'application/apply-patch+yaml')).to.deep.equal(
      JSON.parse(body),
    );
  });

  it('leaves to the YAML parser a duplicate key, and what is not a JSON object', () => {
    const refusedByYaml = [
      '{"a": 1, "a": 2}',
      '{"spec": {"x": 1, "y": {"x": 2, "x": 3}}}',
      '{"a": [{"b": "x:y", "b": ":"}]}',
    ];
    for (const text of refusedByYaml) {
      expect(jsonInYaml(text), text.slice(0, 30)).to.equal(undefined);
      expect(() => parseBody(Buffer.from(text), 'application/apply-patch+yaml')).to.throw(
        /error decoding YAML/,
      );
    }
    // Not JSON at all, or not an object: the YAML parser's.
    for (const text of ['a: 1', '[1, 2]', '{a: 1}', '{"a": 1', '{"__proto__": {"x": 1}}'])
      expect(jsonInYaml(text), text).to.equal(undefined);
    expect(parseBody(Buffer.from('a: 1'), 'application/apply-patch+yaml')).to.deep.equal({ a: 1 });
  });
});
