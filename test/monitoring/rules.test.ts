// manifests/monitoring/: the PrometheusRule's rules pass `promtool check
// rules` and the alert unit tests of rules.test.yaml (`promtool test rules`,
// Debian's `prometheus` package; CI installs it), and every metric the rules
// and the dashboard query is one the product exports. Without promtool the
// promtool half is skipped with one printed line, never silently.
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = new URL('../../', import.meta.url).pathname;
const MONITORING = join(ROOT, 'manifests/monitoring');
const UNIT_TESTS = new URL('./rules.test.yaml', import.meta.url).pathname;

const promtool = (): string | undefined => {
  const r = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
};

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
const rule = parse(readFileSync(join(MONITORING, 'prometheusrule.yaml'), 'utf8')) as {
  kind: string;
  spec: { groups: { name: string; rules: Rule[] }[] };
};
const dashboard = JSON.parse(readFileSync(join(MONITORING, 'dashboard.json'), 'utf8')) as {
  panels: { targets: { expr: string }[] }[];
};

/** Every .ts file under src/, as one text. */
function sources(dir = join(ROOT, 'src')): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((e) =>
      e.isDirectory()
        ? sources(join(dir, e.name))
        : e.name.endsWith('.ts')
          ? readFileSync(join(dir, e.name), 'utf8')
          : '',
    )
    .join('\n');
}

/** The metric names an expression reads (histogram suffixes dropped). */
const metricsOf = (expr: string): string[] =>
  [...expr.matchAll(/\b((?:pool_monitor|cx_ipam)_[a-z_]+)/g)].map((m) =>
    m[1]!.replace(/_(bucket|sum|count)$/, ''),
  );

describe('monitoring: alert rules and dashboard', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rules-'));
    // The PrometheusRule's spec is a Prometheus rule file as it stands.
    writeFileSync(join(dir, 'rules.yaml'), stringify(rule.spec));
    copyFileSync(UNIT_TESTS, join(dir, 'rules.test.yaml'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('alert on what an on-call needs', () => {
    const alerts = rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts).to.include.members([
      'PoolMonitorPodsWaitingForIP',
      'PoolMonitorSubnetExhaustionForecast',
      'PoolMonitorSubnetExhausted',
      'PoolMonitorNNCWriteFailures',
      'PoolMonitorNNCStatusWriteFailures',
      'PoolMonitorNoFulfillerLeader',
      'PoolMonitorLeakedIPsReclaimed',
    ]);
  });

  it('query only metrics the product exports', () => {
    const text = sources();
    const exported = (name: string): boolean =>
      name.startsWith('pool_monitor_fulfiller_')
        ? text.includes(`\${p}${name.slice('pool_monitor_fulfiller_'.length)}`)
        : text.includes(`'${name}'`);
    const used = new Set([
      ...rule.spec.groups.flatMap((g) => g.rules.flatMap((r) => metricsOf(r.expr))),
      ...dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricsOf(t.expr))),
    ]);
    expect(used.size).to.be.greaterThan(10);
    expect([...used].filter((n) => !exported(n))).to.deep.equal([]);
  });

  it('pass promtool check rules and the alerts unit tests (promtool test rules)', function () {
    const bin = promtool();
    if (!bin) {
      console.log(
        '    promtool not found: skipped (apt-get install prometheus; .ci/run installs it)',
      );
      this.skip();
    }
    const check = spawnSync(bin, ['check', 'rules', 'rules.yaml'], { cwd: dir, encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).to.equal(0);
    expect(check.stdout).to.match(/SUCCESS: \d+ rules found/);
    const unit = spawnSync(bin, ['test', 'rules', 'rules.test.yaml'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(unit.status, unit.stdout + unit.stderr).to.equal(0);
    expect(unit.stdout).to.contain('SUCCESS');
  });

  it('render with kubectl kustomize (the dashboard as a ConfigMap)', function () {
    const which = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' });
    if (which.status !== 0) {
      console.log('    kubectl not found: skipped');
      this.skip();
    }
    const out = execFileSync('kubectl', ['kustomize', MONITORING], { encoding: 'utf8' });
    const kinds = out
      .split(/^---$/m)
      .map((d) => (parse(d) as { kind: string }).kind)
      .sort();
    expect(kinds).to.deep.equal([
      'ConfigMap',
      'PodMonitor',
      'PrometheusRule',
      'Service',
      'ServiceMonitor',
    ]);
  });
});
