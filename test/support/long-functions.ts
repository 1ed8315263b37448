// Lists the source files over 400 lines that hold a function over 120 lines
// (the house rule: small files, no long function in a long file), and the
// classes over 300 lines (one concern per class), with the
// TypeScript compiler's parser. test/style/function-size.test.ts holds src to
// it; by hand: node test/support/long-functions.ts [dir ...] (default src),
// which exits 1 when it finds one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const FILE_LINES = 400;
const FUNCTION_LINES = 120;
const CLASS_LINES = 300;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

export interface LongFunction {
  file: string;
  fileLines: number;
  name: string;
  line: number;
  lines: number;
}

function longFunctions(path: string): { name: string; line: number; lines: number }[] {
  const text = readFileSync(path, 'utf8');
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; line: number; lines: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > FUNCTION_LINES) {
        const named = node as ts.Node & { name?: ts.Node };
        const name = named.name?.getText(source) ?? ts.SyntaxKind[node.kind];
        found.push({ name, line: start + 1, lines });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every function over FUNCTION_LINES in a file over FILE_LINES under the roots. */
export function longFunctionsIn(roots: string[]): LongFunction[] {
  const found: LongFunction[] = [];
  for (const file of roots.flatMap(files).sort()) {
    const fileLines = readFileSync(file, 'utf8').split('\n').length;
    if (fileLines <= FILE_LINES) continue;
    for (const f of longFunctions(file)) found.push({ file, fileLines, ...f });
  }
  return found;
}

export interface LongClass {
  file: string;
  name: string;
  line: number;
  lines: number;
}

/** Every class over CLASS_LINES under the roots (a class holds one concern; issue 40). */
export function longClassesIn(roots: string[]): LongClass[] {
  const found: LongClass[] = [];
  for (const file of roots.flatMap(files).sort()) {
    const source = ts.createSourceFile(
      file,
      readFileSync(file, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    const visit = (node: ts.Node): void => {
      if (ts.isClassLike(node)) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        const name = node.name?.getText(source) ?? '(anonymous class)';
        if (lines > CLASS_LINES) found.push({ file, name, line: start + 1, lines });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

if (import.meta.filename === process.argv[1]) {
  const roots = process.argv.slice(2);
  const found = longFunctionsIn(roots.length > 0 ? roots : ['src']);
  for (const f of found)
    console.log(`${f.file} (${f.fileLines} lines): ${f.name} at line ${f.line}, ${f.lines} lines`);
  process.exitCode = found.length > 0 ? 1 : 0;
}
