// The project's two parts (docs/design.md "Two parts"): the product (src/)
// imports neither its CLI nor the harness, no folder or file imports itself
// round a cycle, the drawing in docs/design.md is the code's, and the product
// runs with the harness gone, as it does in the image.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  fileGraph,
  findCycle,
  folderGraph,
  mermaid,
  partFiles,
  ROOT,
} from '../scripts/import-graph.ts';
import { layerViolation, partOf } from '../scripts/lint/layers.js';

const run = promisify(execFile);
const at = (repoPath: string): string => path.join(ROOT, repoPath);

describe('layers: the product and the harness', () => {
  it('the lint rule refuses product -> CLI, product -> harness, CLI -> harness and dev packages', () => {
    const product = at('src/fulfiller/nodes.ts');
    expect(layerViolation(product, '../cli/parse.ts')).to.match(/product code may not import cli/);
    expect(layerViolation(product, '../../harness/apiserver/errors.ts')).to.match(
      /product code may not import harness/,
    );
    expect(layerViolation(product, '../../test/support/rbac.ts')).to.match(/tests, benches/);
    expect(layerViolation(product, 'yaml')).to.match(/"yaml" is not in package.json dependencies/);
    expect(layerViolation(at('src/cli/main.ts'), '../../harness/cli/embedded.ts')).to.match(
      /cli code may not import harness/,
    );
    // What is allowed.
    expect(layerViolation(product, '../kube/selectors.ts')).to.equal(undefined);
    expect(layerViolation(product, '@kubernetes/client-node')).to.equal(undefined);
    expect(layerViolation(product, 'node:fs')).to.equal(undefined);
    expect(layerViolation(at('src/cli/main.ts'), '../fulfiller/run.ts')).to.equal(undefined);
    // The package's manifest is in the image; other files at the top are not.
    expect(layerViolation(at('src/cli/program.ts'), '../../package.json')).to.equal(undefined);
    expect(layerViolation(at('src/cli/program.ts'), '../../tsconfig.json')).to.match(
      /cli code may not import tests, benches or scripts/,
    );
    expect(layerViolation(at('harness/embedded/run.ts'), '../../src/sidecar/run.ts')).to.equal(
      undefined,
    );
    expect(layerViolation(at('harness/apiserver/tls.ts'), '@peculiar/x509')).to.equal(undefined);
    expect(partOf('test/layers.test.ts')).to.equal(undefined);
  });

  it('no source file breaks the layers (relative imports, dynamic ones too)', () => {
    const broken = fileGraph();
    const found: string[] = [];
    for (const [file, targets] of broken)
      for (const target of targets) {
        const spec = path.relative(path.dirname(at(file)), at(target));
        const why = layerViolation(at(file), spec.startsWith('.') ? spec : `./${spec}`);
        if (why) found.push(`${file}: ${why}`);
      }
    expect(found).to.deep.equal([]);
  });

  it('no cycle between folders, nor between files', () => {
    expect(findCycle(folderGraph())).to.equal(undefined);
    expect(findCycle(fileGraph())).to.equal(undefined);
    expect(partFiles().length).to.be.greaterThan(200);
  });

  it('docs/design.md draws the imports as they are (node scripts/import-graph.ts prints the drawing)', () => {
    const doc = readFileSync(at('docs/design.md'), 'utf8');
    expect(doc).to.include(`\`\`\`mermaid\n${mermaid(folderGraph())}\n\`\`\``);
  });

  it('the product runs with the harness gone, as in the image: sidecar, fulfiller and simulate only', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'product-only-'));
    try {
      for (const part of ['bin', 'src', 'package.json'])
        cpSync(at(part), path.join(dir, part), { recursive: true });
      symlinkSync(at('node_modules'), path.join(dir, 'node_modules'));
      const bin = path.join(dir, 'bin/pool-monitor');
      const help = await run(bin, ['--help']);
      const commands = [...help.stdout.matchAll(/^ {2}(\w+) \[options\]/gm)].map((m) => m[1]);
      expect(commands).to.deep.equal(['fulfiller', 'sidecar', 'simulate']);
      const sim = await run(bin, ['simulate', '--scenario', 'burst-20m', '--json']);
      expect(JSON.parse(sim.stdout)).to.have.property('nncWrites').that.is.a('number');
      const embedded = await run(bin, ['embedded']).then(
        () => 'ran',
        (err: { code?: number; stderr?: string }) => err,
      );
      expect(embedded).to.not.equal('ran');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
