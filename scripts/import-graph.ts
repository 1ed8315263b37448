// The imports between the project's folders, as a Mermaid drawing: the
// product (src/) and the harness (harness/) as two boxes, an arrow for every
// folder that imports another. `node scripts/import-graph.ts` prints it;
// docs/design.md holds the current one and test/layers.test.ts keeps it true.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export const ROOT = path.resolve(import.meta.dirname, '..');

/** A folder of the drawing: `src/<folder>` or `harness/<folder>`; undefined outside both. */
export function folderOf(repoPath: string): string | undefined {
  const [top, second] = repoPath.split('/');
  if (top !== 'src' && top !== 'harness') return undefined;
  return second && !second.endsWith('.ts') ? `${top}/${second}` : top;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) yield* sourceFiles(rel);
    else if (entry.name.endsWith('.ts')) yield rel;
  }
}

/** Every relative import (static, type-only, dynamic, re-export) of one file, as repo paths. */
export function importsOf(repoPath: string): string[] {
  const text = readFileSync(path.join(ROOT, repoPath), 'utf8');
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(repoPath), spec)));
}

/** Every source file of the two parts, as repo paths. */
export function partFiles(): string[] {
  return [...sourceFiles('src'), ...sourceFiles('harness')];
}

/** file -> the files it imports. */
export function fileGraph(): Map<string, Set<string>> {
  return new Map(partFiles().map((file) => [file, new Set(importsOf(file))]));
}

/** folder -> the folders it imports (never itself). */
export function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of partFiles()) {
    const from = folderOf(file) as string;
    const targets = graph.get(from) ?? new Set<string>();
    graph.set(from, targets);
    for (const target of importsOf(file)) {
      const to = folderOf(target);
      if (to !== undefined && to !== from) targets.add(to);
    }
  }
  return graph;
}

/** A cycle in the graph (of folders or files), if there is one. */
export function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, 'open');
    stack.push(node);
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

const id = (folder: string): string => folder.replace(/[/-]/g, '_');

/** The drawing, in Mermaid: one subgraph per part, edges sorted so it is stable. */
export function mermaid(graph: Map<string, Set<string>>): string {
  const folders = [...graph.keys()].sort();
  const lines = ['flowchart LR'];
  for (const [part, title] of [
    ['harness', 'harness: the test cluster'],
    ['src', 'src: the product'],
  ] as const) {
    lines.push(`  subgraph ${part}["${title}"]`);
    for (const f of folders.filter((x) => x.split('/')[0] === part))
      lines.push(`    ${id(f)}["${f.slice(part.length + 1) || part}"]`);
    lines.push('  end');
  }
  for (const from of folders)
    for (const to of [...(graph.get(from) ?? [])].sort()) lines.push(`  ${id(from)} --> ${id(to)}`);
  return lines.join('\n');
}

if (import.meta.main) process.stdout.write(`${mermaid(folderGraph())}\n`);
