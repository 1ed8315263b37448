import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BUILT_IN_SCENARIO_NAMES,
  builtInScenario,
  DEFAULT_SCENARIO,
} from '../../harness/workload/builtins.ts';
import { loadScenario, parseScenarioText } from '../../harness/workload/load.ts';
import { planScenario, plannedDemand } from '../../harness/workload/plan.ts';
import { parseScenario, ScenarioError } from '../../harness/workload/scenario.ts';
import { workloadPod } from '../../harness/workload/pod.ts';

const base = { name: 'x', durationSeconds: 30, steps: [{ at: 0, create: 1 }] };
const bad = (doc: unknown, message: string) =>
  expect(() => parseScenario(doc, 'f.yaml')).to.throw(ScenarioError, message);

describe('sim/workload/scenario', () => {
  it('parses a leaks section: dropped CNI DELs, the grace, lost stores', () => {
    const s = parseScenario({
      ...base,
      leaks: { dropReleaseRate: 0.25, loseStore: [{ at: 10, nodes: [1, 1] }, { at: 20 }] },
    });
    expect(s.leaks).to.deep.equal({
      dropReleaseRate: 0.25,
      graceSeconds: 5,
      storeLosses: [
        { at: 10, nodes: [1] },
        { at: 20, nodes: [0] },
      ],
    });
    expect(parseScenario(base).leaks).to.equal(undefined);
    bad(
      { ...base, leaks: { dropReleaseRate: 2 } },
      'leaks.dropReleaseRate: must be a share from 0 to 1, got 2',
    );
    bad({ ...base, leaks: { graceSeconds: 31 } }, 'leaks.graceSeconds: must be seconds from 0');
    bad({ ...base, leaks: { loseStore: [{ at: 40 }] } }, 'leaks.loseStore[0].at: must be seconds');
    bad({ ...base, leaks: { loseStore: [{ at: 1, nodes: [] }] } }, 'leaks.loseStore[0].nodes');
    bad({ ...base, leaks: { drop: 1 } }, 'leaks.drop: unknown field');
    bad({ ...base, leaks: 3 }, 'leaks: must be a mapping');
  });

  it('parses a valid document with defaults', () => {
    expect(parseScenario(base, 'f.yaml')).to.deep.equal({
      name: 'x',
      description: '',
      durationSeconds: 30,
      nodes: 1,
      steps: [{ at: 0, action: 'create', count: 1, over: 0 }],
    });
    const s = parseScenario({
      ...base,
      nodes: 3,
      podSubnet: '10.1.0.0/24',
      steps: [{ at: 5, delete: 'all', over: 2, group: 'job', nodes: [0, 2, 2] }],
    });
    expect(s.podSubnet).to.equal('10.1.0.0/24');
    expect(s.steps[0]).to.deep.equal({
      at: 5,
      action: 'delete',
      count: 'all',
      over: 2,
      group: 'job',
      nodes: [0, 2],
    });
  });

  it('names the bad field in every error', () => {
    bad(null, 'f.yaml: (document): must be a mapping');
    bad({ ...base, extra: 1 }, 'f.yaml: extra: unknown field');
    bad(
      { ...base, name: 'Bad Name' },
      'f.yaml: name: must be lowercase letters, digits and dashes (at most 40), got "Bad Name"',
    );
    bad(
      { ...base, durationSeconds: -1 },
      'f.yaml: durationSeconds: must be a number of seconds in (0, 86400], got -1',
    );
    bad({ ...base, nodes: 0 }, 'f.yaml: nodes: must be an integer from 1 to 5000, got 0');
    bad({ ...base, podSubnet: '10.0.0.0/33' }, 'f.yaml: podSubnet: must be an IPv4 CIDR');
    bad({ ...base, podSubnet: '300.0.0.0/16' }, 'f.yaml: podSubnet:');
    bad({ ...base, steps: [] }, 'f.yaml: steps: must be a non-empty list');
    bad({ ...base, steps: [5] }, 'f.yaml: steps[0]: must be a mapping');
    bad({ ...base, steps: [{ at: 0, craete: 1 }] }, 'f.yaml: steps[0].craete: unknown field');
    bad(
      { ...base, steps: [{ at: 0 }] },
      'f.yaml: steps[0]: needs exactly one of create, complete, delete (has none)',
    );
    bad({ ...base, steps: [{ at: 0, create: 1, delete: 1 }] }, '(has create, delete)');
    bad(
      { ...base, steps: [{ at: 31, create: 1 }] },
      'f.yaml: steps[0].at: must be a number of seconds from 0 to durationSeconds (30), got 31',
    );
    bad(
      { ...base, steps: [{ at: 0, create: 'all' }] },
      'f.yaml: steps[0].create: must be an integer from 0 to 10000, got "all"',
    );
    bad(
      { ...base, steps: [{ at: 0, delete: 1.5 }] },
      'f.yaml: steps[0].delete: must be an integer from 0 to 10000 or "all", got 1.5',
    );
    bad({ ...base, steps: [{ at: 20, create: 1, over: 20 }] }, 'f.yaml: steps[0].over:');
    bad({ ...base, steps: [{ at: 0, create: 1, group: 'A' }] }, 'f.yaml: steps[0].group:');
    bad(
      { ...base, steps: [{ at: 0, create: 1, nodes: [-1] }] },
      'f.yaml: steps[0].nodes: must be a non-empty list of node indexes',
    );
  });

  it('never accepts garbage, and always fails with a ScenarioError', () => {
    fc.assert(
      fc.property(fc.anything(), (doc) => {
        try {
          parseScenario(doc);
          expect.fail('accepted');
        } catch (err) {
          expect(err).to.be.instanceOf(ScenarioError);
        }
      }),
    );
  });

  it('loads YAML and JSON files, and built-in names', () => {
    const dir = mkdtempSync(join(tmpdir(), 'scenario-'));
    const yamlPath = join(dir, 's.yaml');
    writeFileSync(
      yamlPath,
      'name: mine\ndurationSeconds: 20\nsteps:\n  - {at: 0, create: 3}\n  - at: 10\n    delete: all\n',
    );
    const jsonPath = join(dir, 's.json');
    writeFileSync(jsonPath, JSON.stringify({ ...base, name: 'js' }));
    expect(loadScenario(yamlPath).steps).to.have.length(2);
    expect(loadScenario(jsonPath).name).to.equal('js');
    expect(loadScenario('burst').name).to.equal('burst');
    expect(() => loadScenario('nope')).to.throw(
      ScenarioError,
      'unknown scenario "nope": use one of default, burst',
    );
    expect(() => loadScenario(join(dir, 'missing.yaml'))).to.throw(
      ScenarioError,
      'missing.yaml: file not found',
    );
    expect(() => parseScenarioText('a: [1, 2', 'b.yaml')).to.throw(
      ScenarioError,
      'b.yaml: not valid YAML or JSON',
    );
    expect(() => parseScenarioText('name: a\nname: b', 'd.yaml')).to.throw(
      ScenarioError,
      'd.yaml: not valid YAML or JSON',
    );
    rmSync(dir, { recursive: true, force: true });
  });

  it('built-ins are valid, short and end where they began or lower', () => {
    expect(BUILT_IN_SCENARIO_NAMES).to.include.members([
      'default',
      'burst',
      'churn',
      'oscillation',
      'jobs',
      'exhaustion',
      'scale-to-zero',
    ]);
    expect(DEFAULT_SCENARIO).to.equal('default');
    for (const name of BUILT_IN_SCENARIO_NAMES) {
      const s = builtInScenario(name)!;
      expect(s.durationSeconds, name).to.be.at.most(95);
      const plan = planScenario(
        s,
        Array.from({ length: s.nodes }, (_, i) => `node-${i}`),
      );
      expect(plan.skipped, name).to.equal(0);
      expect(plan.actions.at(-1)!.atMs, name).to.be.below(plan.durationMs - 10_000);
    }
    expect(builtInScenario('constructor')).to.equal(undefined);
  });

  it('an unbound create step leaves its pods to the scheduler (issue 43)', () => {
    const s = parseScenario({
      ...base,
      steps: [
        { at: 0, create: 2, nodes: [1], unbound: true },
        { at: 1, create: 1 },
      ],
    });
    const plan = planScenario(s, ['n0', 'n1']);
    expect(plan.actions.map((a) => [a.pod, a.unbound ?? false])).to.deep.equal([
      ['app-1-1', true],
      ['app-1-2', true],
      ['app-0-1', false],
      ['app-1-3', false],
    ]);
    expect(
      workloadPod({ name: 'p', namespace: 'd', group: 'g', scenario: 'x', scheduledAtMs: 1 }).spec,
    ).to.not.have.property('nodeName');
    expect(() => parseScenario({ ...base, steps: [{ at: 0, delete: 1, unbound: true }] })).to.throw(
      ScenarioError,
      /steps\[0\]\.unbound: must be true or false, and only on a create step/,
    );
    expect(builtInScenario('subnet-dry')!.steps.some((st) => st.unbound)).to.equal(true);
  });

  it('the default scenario scales up past its subnet, then down', () => {
    const s = builtInScenario('default')!;
    expect(s.podSubnet).to.equal('10.240.0.0/24');
    const nodes = Array.from({ length: s.nodes }, (_, i) => `node-${i}`);
    const plan = planScenario(s, nodes);
    let demand = 0;
    let peak = 0;
    const gone = new Set<string>();
    for (const a of plan.actions) {
      if (a.kind === 'create') demand += 1;
      else if (!gone.has(a.pod)) {
        demand -= 1;
        gone.add(a.pod);
      }
      peak = Math.max(peak, demand);
    }
    // Batch 16 at 50 %: a peak demand of 76 pods per node asks 96 IPs each, more than a /24 holds.
    expect(peak).to.equal(76 * 3);
    expect(plannedDemand(plan, 3)).to.deep.equal([6, 6, 6]);
    expect(s.durationSeconds).to.be.within(60, 90);
  });
});
