// bin/pool-monitor --version and --help load no sub-command's dependencies:
// sub-commands import what they run when they run.
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { importsOf } from '../support/imports-of.ts';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));
const ROOT = new URL('../../', import.meta.url).href;

/** The modules `bin/pool-monitor ...args` loads: npm packages and src/ and harness/ files. */
function loaded(...args: string[]): { packages: string[]; src: string[] } {
  // The sources, not the bundled sidecar: what each source module loads is the question.
  const r = importsOf(BIN, args, { POOL_MONITOR_SOURCES: '1' });
  expect(r.status, r.stderr).to.equal(0);
  const packages = new Set<string>();
  for (const url of r.urls) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m) packages.add(m[1] as string);
  }
  return {
    packages: [...packages].sort(),
    src: r.urls
      .filter((u) => u.startsWith(`${ROOT}src/`) || u.startsWith(`${ROOT}harness/`))
      .map((u) => u.slice(ROOT.length)),
  };
}

describe('bin/pool-monitor start-up', function () {
  this.timeout(60_000);

  for (const args of [['--version'], ['--help'], ['sidecar', '--help'], ['fulfiller', '--help']]) {
    it(`${args.join(' ')} loads only the command line parser`, () => {
      const { packages, src } = loaded(...args);
      expect(packages).to.deep.equal(['commander']);
      // Command definitions and the pure modules their flags need (the
      // authorization modes and feature gates, the label selector parser behind
      // --node-selector, option parsers and values, the embedded scenarios'
      // names and Azure layouts, --netns's limits and --ip-family's choices, the --azure-* flags and their settings check
      // without the Azure SDK), nothing that runs.
      const pure =
        /^(src|harness)\/cli\/.*|^harness\/apiserver\/auth\/(modes|feature-gates)\.ts$|^src\/kube\/(selectors|json-object)\.ts$|^src\/scaling\/(release-delay|idle-budget)-value\.ts$|^harness\/workload\/(builtins|scenario|leaks)\.ts$|^harness\/embedded\/(azure-report|netns-limits|ip-family)\.ts$/;
      const running = src.filter((f) =>
        /^harness\/|^src\/(ipstore|kube|metrics|monitor|nodeapi|scaling)\/|^src\/log\/logger|run\.ts$|simulate\.ts$/.test(
          f.replace(pure, ''),
        ),
      );
      expect(running).to.deep.equal([]);
    });
  }

  it('a sub-command still loads what it runs', () => {
    const { packages } = loaded('simulate', '--scenario', 'burst-20m', '--json');
    expect(packages).to.include.members(['rxjs', 'winston']);
  });
});
