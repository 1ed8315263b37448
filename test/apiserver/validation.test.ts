// The API server validates built-in kinds as kube-apiserver does, over real
// HTTP: fieldValidation (Strict/Warn/Ignore) on unknown and duplicate fields,
// DaemonSet/Deployment selectors, ValidatingAdmissionPolicy CEL compiled at
// write time, Lease MicroTime decoding, conditional updates of custom resources.
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { microTimeError } from '../../harness/apiserver/validation/micro-time.ts';
import { scanJson } from '../../harness/apiserver/validation/json-scan.ts';
import { call, NNC_PATH, nnc, withCrds } from './helpers.ts';

const DS_PATH = '/apis/apps/v1/namespaces/kube-system/daemonsets';
const DEPLOY_PATH = '/apis/apps/v1/namespaces/default/deployments';
const LEASE_PATH = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
const VAP_PATH = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';
const VAPB_PATH = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';

function daemonSet(name: string, selector: unknown, labels: Record<string, string>): unknown {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: 'kube-system' },
    spec: {
      ...(selector === undefined ? {} : { selector }),
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      },
    },
  };
}

const warnings = (h: Headers): string[] =>
  (h.get('warning') ?? '')
    .split(/,\s*(?=299 )/)
    .filter((w) => w !== '')
    .map((w) => JSON.parse(w.replace(/^299 - /, '')) as string);

describe('apiserver: built-in validation as kube-apiserver', () => {
  let server: ApiServer;
  before(async () => {
    server = await withCrds();
  });
  after(() => server.close());

  describe('fieldValidation', () => {
    const body = `{"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"NAME","name":"NAME","unknownMeta":1},
      "spec":{"unknown1":"v","unknownDupe":"a","unknownDupe":"b","paused":true,"paused":false,
        "selector":{"matchLabels":{"app":"x"}},
        "template":{"metadata":{"labels":{"app":"x"}},
          "spec":{"containers":[{"name":"c","image":"i","unknownNested":1,
            "imagePullPolicy":"Always","imagePullPolicy":"Never"}]}}}}`;
    const issues = [
      'duplicate field "metadata.name"',
      'unknown field "metadata.unknownMeta"',
      'unknown field "spec.unknown1"',
      'unknown field "spec.unknownDupe"',
      'duplicate field "spec.paused"',
      'unknown field "spec.template.spec.containers[0].unknownNested"',
      'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    ];

    it('Strict refuses unknown and duplicate fields with 400, in the order of the body', async () => {
      const r = await call(
        server,
        'POST',
        `${DEPLOY_PATH}?fieldValidation=Strict`,
        body.replace(/NAME/g, 'd-strict'),
      );
      expect(r.status).to.equal(400);
      expect(r.body.reason).to.equal('BadRequest');
      expect(r.body.message).to.equal(
        `Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: ${issues.join(', ')}`,
      );
    });

    it('Warn (and no directive: the 1.27+ default) writes without them and warns about each', async () => {
      for (const [name, q] of [
        ['d-warn', '?fieldValidation=Warn'],
        ['d-default', ''],
      ] as const) {
        const r = await call(server, 'POST', `${DEPLOY_PATH}${q}`, body.replace(/NAME/g, name));
        expect(r.status, JSON.stringify(r.body)).to.equal(201);
        expect(warnings(r.headers)).to.deep.equal(issues);
        expect(r.body.spec).to.not.have.property('unknown1');
        expect(r.body.spec.paused).to.equal(false);
        expect(r.body.spec.template.spec.containers[0]).to.not.have.property('unknownNested');
        expect(r.body.spec.template.spec.containers[0].imagePullPolicy).to.equal('Never');
      }
    });

    it('Ignore writes without them, silently; an unsupported directive is 422', async () => {
      const r = await call(
        server,
        'POST',
        `${DEPLOY_PATH}?fieldValidation=Ignore`,
        body.replace(/NAME/g, 'd-ignore'),
      );
      expect(r.status).to.equal(201);
      expect(r.headers.get('warning')).to.equal(null);
      const bad = await call(server, 'POST', `${DEPLOY_PATH}?fieldValidation=Loud`, body);
      expect(bad.status).to.equal(422);
      expect(bad.body.message).to.equal(
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"',
      );
    });

    it('a merge patch: the body duplicates first, then the unknown fields sorted', async () => {
      const path = `${DEPLOY_PATH}/d-ignore?fieldValidation=Strict`;
      const r = await call(
        server,
        'PATCH',
        path,
        '{"spec":{"zeta":1,"paused":true,"paused":false,"alpha":2}}',
        'application/merge-patch+json',
      );
      expect(r.status).to.equal(400);
      expect(r.body.message).to.equal(
        'strict decoding error: duplicate field "spec.paused", unknown field "spec.alpha", unknown field "spec.zeta"',
      );
    });

    it('a YAML body: go-yaml duplicate lines first, then the unknown fields sorted', async () => {
      const yaml = [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata:',
        '  name: d-yaml',
        'spec:',
        '  zeta: 1',
        '  paused: true',
        '  paused: false',
        '  selector: {matchLabels: {app: x}}',
        '  template:',
        '    metadata: {labels: {app: x}}',
        '    spec: {containers: [{name: c, image: i}]}',
      ].join('\n');
      const strict = await call(
        server,
        'POST',
        `${DEPLOY_PATH}?fieldValidation=Strict`,
        yaml,
        'application/yaml',
      );
      expect(strict.status).to.equal(400);
      expect(strict.body.message).to.equal(
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: yaml: unmarshal errors:\n  line 8: key "paused" already set in map, unknown field "spec.zeta"',
      );
      const warn = await call(server, 'POST', DEPLOY_PATH, yaml, 'application/yaml');
      expect(warn.status).to.equal(201);
      expect(warnings(warn.headers)).to.deep.equal([
        'line 8: key "paused" already set in map',
        'unknown field "spec.zeta"',
      ]);
    });

    it('server-side apply of a built-in kind refuses an unknown field whatever the directive', async () => {
      const r = await call(
        server,
        'PATCH',
        `${DS_PATH}/applied?fieldManager=test&fieldValidation=Ignore`,
        JSON.stringify({
          ...(daemonSet('applied', { matchLabels: { a: 'b' } }, { a: 'b' }) as object),
          foo: 1,
        }),
        'application/apply-patch+yaml',
      );
      expect(r.status).to.equal(500);
      expect(r.body.reason).to.equal('');
      expect(r.body.message).to.equal(
        'failed to create typed patch object (kube-system/applied; apps/v1, Kind=DaemonSet): .foo: field not declared in schema',
      );
    });

    it('custom resources: Strict refuses what the schema prunes, Warn warns about it', async () => {
      const body = { ...nnc('cr-1'), spec: { requestedIPCount: 1, bogus: true } };
      const strict = await call(server, 'POST', `${NNC_PATH}?fieldValidation=Strict`, body);
      expect(strict.status).to.equal(400);
      expect(strict.body.message).to.equal(
        'NodeNetworkConfig in version "v1alpha" cannot be handled as a NodeNetworkConfig: strict decoding error: unknown field "spec.bogus"',
      );
      const warn = await call(server, 'POST', NNC_PATH, body);
      expect(warn.status).to.equal(201);
      expect(warnings(warn.headers)).to.deep.equal(['unknown field "spec.bogus"']);
      expect(warn.body.spec).to.deep.equal({ requestedIPCount: 1 });
    });

    it('finds the duplicates of a JSON text with their paths', () => {
      const s = scanJson('{"a":[{"b":1,"b":2}],"c":{"d\\"":1,"d\\"":2},"a":3}');
      expect(s.duplicates.map((d) => d.path)).to.deep.equal(['a[0].b', 'c.d"', 'a']);
    });
  });

  describe('DaemonSet and Deployment selectors', () => {
    it('refuses a DaemonSet whose selector does not match its template labels (422 with causes)', async () => {
      const r = await call(
        server,
        'POST',
        DS_PATH,
        daemonSet('x', { matchLabels: { app: 'x' } }, { app: 'y' }),
      );
      expect(r.status).to.equal(422);
      expect(r.body.reason).to.equal('Invalid');
      expect(r.body.message).to.equal(
        'DaemonSet.apps "x" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`',
      );
      expect(r.body.details).to.deep.include({ name: 'x', group: 'apps', kind: 'DaemonSet' });
      expect(r.body.details.causes).to.deep.equal([
        {
          reason: 'FieldValueInvalid',
          field: 'spec.template.metadata.labels',
          message:
            'Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`',
        },
      ]);
    });

    it('a DaemonSet without a selector matches nothing; an empty one is refused', async () => {
      const none = await call(server, 'POST', DS_PATH, daemonSet('none', undefined, { app: 'y' }));
      expect(none.status).to.equal(422);
      expect(none.body.details.causes.map((c: { field: string }) => c.field)).to.deep.equal([
        'spec.template.metadata.labels',
      ]);
      const empty = await call(server, 'POST', DS_PATH, daemonSet('empty', {}, { app: 'y' }));
      expect(empty.status).to.equal(422);
      expect(empty.body.message).to.equal(
        'DaemonSet.apps "empty" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset',
      );
    });

    it('a Deployment without a selector: Required, and its labels match nothing', async () => {
      const r = await call(server, 'POST', DEPLOY_PATH, {
        metadata: { name: 'nosel' },
        spec: { template: { metadata: { labels: { app: 'a' } }, spec: { containers: [] } } },
      });
      expect(r.status).to.equal(422);
      expect(r.body.message).to.equal(
        'Deployment.apps "nosel" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{"app":"a"}: `selector` does not match template `labels`]',
      );
    });

    it('a selector is immutable; matchExpressions count', async () => {
      const sel = {
        matchLabels: { app: 'x' },
        matchExpressions: [{ key: 'tier', operator: 'In', values: ['a'] }],
      };
      const ok = await call(
        server,
        'POST',
        DS_PATH,
        daemonSet('imm', sel, { app: 'x', tier: 'a' }),
      );
      expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
      const r = await call(
        server,
        'PATCH',
        `${DS_PATH}/imm`,
        {
          spec: {
            selector: { matchLabels: { app: 'x' }, matchExpressions: null },
          },
        },
        'application/merge-patch+json',
      );
      expect(r.status).to.equal(422);
      expect(r.body.message).to.equal(
        'DaemonSet.apps "imm" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"x"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable',
      );
      // Unchanged selector, changed template: accepted.
      const same = await call(
        server,
        'PATCH',
        `${DS_PATH}/imm`,
        { spec: { template: { metadata: { labels: { app: 'x', tier: 'a', extra: '1' } } } } },
        'application/merge-patch+json',
      );
      expect(same.status, JSON.stringify(same.body)).to.equal(200);
    });
  });

  describe('ValidatingAdmissionPolicy', () => {
    const policy = (name: string, expression: string): unknown => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'] },
          ],
        },
        validations: [{ expression }],
      },
    });

    it('compiles its CEL at write time: a syntax error is 422 on the expression', async () => {
      const r = await call(server, 'POST', VAP_PATH, policy('bad', 'object.a ++ 1'));
      expect(r.status).to.equal(422);
      expect(r.body.details.causes[0].field).to.equal('spec.validations[0].expression');
      expect(r.body.message).to.match(
        /^ValidatingAdmissionPolicy\.admissionregistration\.k8s\.io "bad" is invalid: spec\.validations\[0\]\.expression: Invalid value: "object\.a \+\+ 1": compilation failed: ERROR: <input>:1:\d+: Syntax error: .*\n \| object\.a \+\+ 1\n \| \.*\^$/,
      );
    });

    it('refuses an undeclared variable, accepts comprehension variables', async () => {
      const r = await call(server, 'POST', VAP_PATH, policy('undeclared', 'obj.spec != null'));
      expect(r.status).to.equal(422);
      expect(r.body.details.causes[0].message).to.equal(
        `Invalid value: "obj.spec != null": compilation failed: ERROR: <input>:1:1: undeclared reference to 'obj' (in container '')\n | obj.spec != null\n | ^`,
      );
      const ok = await call(
        server,
        'POST',
        VAP_PATH,
        policy('fine', 'object.spec.containers.all(c, c.image != "") && int(1) == 1'),
      );
      expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    });

    it('a binding needs a policy name and validation actions', async () => {
      const r = await call(server, 'POST', VAPB_PATH, { metadata: { name: 'b' }, spec: {} });
      expect(r.status).to.equal(422);
      expect(r.body.message).to.equal(
        'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "b" is invalid: [spec.policyName: Required value, spec.validationActions: Required value: at least one validation action is required]',
      );
    });
  });

  describe('Lease MicroTime', () => {
    const lease = (name: string, renewTime: string): unknown => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name },
      spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime },
    });

    it('accepts RFC3339 with six fractional digits, refuses anything else as a decoding error (400)', async () => {
      const ok = await call(server, 'POST', LEASE_PATH, lease('ok', '2024-05-01T10:00:00.123456Z'));
      expect(ok.status).to.equal(201);
      const bad = await call(server, 'POST', LEASE_PATH, lease('bad', '2024-05-01T10:00:00Z'));
      expect(bad.status).to.equal(400);
      expect(bad.body.reason).to.equal('BadRequest');
      expect(bad.body.message).to.equal(
        'Lease in version "v1" cannot be handled as a Lease: parsing time "2024-05-01T10:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
      );
      const upd = await call(server, 'PUT', `${LEASE_PATH}/ok`, lease('ok', 'yesterday'));
      expect(upd.status).to.equal(400);
      expect(upd.body.message).to.match(/cannot parse "yesterday" as "2006"$/);
    });

    it('words the errors as Go time.Parse', () => {
      expect(microTimeError('2024-05-01T10:00:00.000000+02:00')).to.equal(undefined);
      expect(microTimeError('2024-13-01T10:00:00.000000Z')).to.equal(
        'parsing time "2024-13-01T10:00:00.000000Z": month out of range',
      );
      expect(microTimeError('2024-05-01 10:00:00.000000Z')).to.equal(
        'parsing time "2024-05-01 10:00:00.000000Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse " 10:00:00.000000Z" as "T"',
      );
      expect(microTimeError('2024-05-01T10:00:00.000000Zjunk')).to.equal(
        'parsing time "2024-05-01T10:00:00.000000Zjunk": extra text: "junk"',
      );
    });
  });

  describe('conditional updates of custom resources', () => {
    it('a PUT (and a /status PUT) without resourceVersion is refused; a built-in kind may omit it', async () => {
      const created = await call(server, 'POST', NNC_PATH, nnc('cond-1'));
      expect(created.status).to.equal(201);
      const unconditional = { ...nnc('cond-1', 20) };
      for (const suffix of ['', '/status']) {
        const r = await call(server, 'PUT', `${NNC_PATH}/cond-1${suffix}`, unconditional);
        expect(r.status).to.equal(422);
        expect(r.body.message).to.equal(
          'NodeNetworkConfig.acn.azure.com "cond-1" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
        );
      }
      const put = await call(server, 'PUT', `${LEASE_PATH}/ok`, {
        metadata: { name: 'ok' },
        spec: { holderIdentity: 'b' },
      });
      expect(put.status).to.equal(200);
    });
  });

  // A write that names a uid names the object it means: an object of the
  // name made since (another uid) is not written.
  it('a PUT with another uid is a 409 precondition, a merge patch with one a 422 (immutable)', async () => {
    const created = await call(server, 'POST', NNC_PATH, nnc('uid-1'));
    const meta = (created.body as { metadata: { uid: string; resourceVersion: string } }).metadata;
    const other = '00000000-0000-0000-0000-000000000001';
    const put = await call(server, 'PUT', `${NNC_PATH}/uid-1`, {
      ...nnc('uid-1'),
      metadata: { name: 'uid-1', uid: other, resourceVersion: meta.resourceVersion },
    });
    expect(put.status).to.equal(409);
    expect(put.body.message).to.equal(
      `Operation cannot be fulfilled on nodenetworkconfigs.acn.azure.com "uid-1": Precondition failed: UID in precondition: ${other}, UID in object meta: ${meta.uid}`,
    );
    const merge = 'application/merge-patch+json';
    const patch = await call(
      server,
      'PATCH',
      `${NNC_PATH}/uid-1`,
      { metadata: { uid: other, labels: { a: 'b' } } },
      merge,
    );
    expect(patch.status).to.equal(422);
    expect(patch.body.message).to.equal(
      `NodeNetworkConfig.acn.azure.com "uid-1" is invalid: metadata.uid: Invalid value: "${other}": field is immutable`,
    );
    const same = await call(
      server,
      'PATCH',
      `${NNC_PATH}/uid-1`,
      { metadata: { uid: meta.uid, labels: { a: 'b' } } },
      merge,
    );
    expect(same.status).to.equal(200);
  });

  // ValidateNoNewFinalizers (k8s.io/apimachinery/pkg/api/validation/objectmeta.go).
  it('an object being deleted takes no new finalizer; removing one, or keeping them, is fine', async () => {
    const body = nnc('terminating-one');
    (body.metadata as Record<string, unknown>).finalizers = ['example.com/a'];
    expect((await call(server, 'POST', NNC_PATH, body)).status).to.equal(201);
    expect((await call(server, 'DELETE', `${NNC_PATH}/terminating-one`)).status).to.equal(200);
    const add = await call(
      server,
      'PATCH',
      `${NNC_PATH}/terminating-one`,
      { metadata: { finalizers: ['example.com/a', 'example.com/z', 'example.com/b'] } },
      'application/merge-patch+json',
    );
    expect(add.status).to.equal(422);
    expect(add.body.message).to.equal(
      'NodeNetworkConfig.acn.azure.com "terminating-one" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/b", "example.com/z"}',
    );
    const same = await call(
      server,
      'PATCH',
      `${NNC_PATH}/terminating-one`,
      { metadata: { labels: { a: 'b' } } },
      'application/merge-patch+json',
    );
    expect(same.status).to.equal(200);
    const remove = await call(
      server,
      'PATCH',
      `${NNC_PATH}/terminating-one`,
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    expect(remove.status).to.equal(200);
    expect((await call(server, 'GET', `${NNC_PATH}/terminating-one`)).status).to.equal(404);
  });
});
