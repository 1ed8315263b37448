// One node's sync as a reader follows it: from the queue's handler
// (Reconciler.run, src/fulfiller/reconciler.ts) every call the TypeScript
// checker resolves to a function of src/fulfiller/ is followed, in source
// order, each function once. A call through an interface (a port such as
// the backend or the NNC API, or the run's context) is drawn, not followed:
// that is where the run leaves the fulfiller's own code. The last line
// counts the calls into a file that is already on the way down, the
// "returns to a file already left" of docs/design/fulfiller.md#shape.
//
//   node scripts/sync-path.ts            the tree, then the files in order
//   node scripts/sync-path.ts --mermaid  the files as a Mermaid drawing
//   make sync-path                       the same as the first
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '..');
const FOLLOWED = 'src/fulfiller/';
const START = { file: 'src/fulfiller/reconciler.ts', cls: 'Reconciler', method: 'run' };

/** One call on the way: a function of src/fulfiller, a port, or another folder's function. */
export interface Step {
  depth: number;
  /** Repo path of the callee's declaration. */
  file: string;
  name: string;
  kind: 'function' | 'port' | 'outside' | 'seen';
  /** A call into a file already on the way down (not the caller's own). */
  returns: boolean;
}

type FunctionLike =
  ts.FunctionDeclaration | ts.MethodDeclaration | ts.ArrowFunction | ts.FunctionExpression;

function repoPath(file: ts.SourceFile): string {
  return path.relative(ROOT, file.fileName).split(path.sep).join('/');
}

function nameOf(decl: ts.Declaration): string {
  const own = ts.getNameOfDeclaration(decl)?.getText() ?? '(anonymous)';
  const parent = decl.parent;
  if ((ts.isClassDeclaration(parent) || ts.isInterfaceDeclaration(parent)) && parent.name)
    return `${parent.name.text}.${own}`;
  return own;
}

/** The function a declaration stands for: itself, or a const's arrow or function. */
function bodyOf(decl: ts.Declaration): FunctionLike | undefined {
  if (ts.isFunctionDeclaration(decl) || ts.isMethodDeclaration(decl)) return decl;
  if (ts.isVariableDeclaration(decl) && decl.initializer) {
    const init = decl.initializer;
    if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) return init;
  }
  return undefined;
}

function isPort(decl: ts.Declaration): boolean {
  return ts.isMethodSignature(decl) || ts.isPropertySignature(decl);
}

/** Calls in a function's body, in source order (nested arrows included: they run as part of it). */
function callsIn(fn: FunctionLike): ts.CallExpression[] {
  const out: ts.CallExpression[] = [];
  const walk = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) out.push(node);
    ts.forEachChild(node, walk);
  };
  if (fn.body) walk(fn.body);
  return out;
}

function calleeOf(checker: ts.TypeChecker, call: ts.CallExpression): ts.Declaration | undefined {
  const target = ts.isPropertyAccessExpression(call.expression)
    ? call.expression.name
    : call.expression;
  let symbol = checker.getSymbolAtLocation(target);
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  return symbol?.declarations?.[0];
}

/** Follows the calls from Reconciler.run; the steps in the order a reader meets them. */
export function syncPath(): Step[] {
  const configPath = path.join(ROOT, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram([path.join(ROOT, START.file)], parsed.options);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path.join(ROOT, START.file));
  if (!source) throw new Error(`${START.file}: not found`);
  let start: ts.MethodDeclaration | undefined;
  source.forEachChild((node) => {
    if (ts.isClassDeclaration(node) && node.name?.text === START.cls)
      for (const m of node.members)
        if (ts.isMethodDeclaration(m) && m.name.getText() === START.method) start = m;
  });
  if (!start) throw new Error(`${START.file}: no ${START.cls}.${START.method}`);

  const steps: Step[] = [];
  const expanded = new Set<ts.Declaration>();
  const visit = (decl: ts.Declaration, fn: FunctionLike, chain: string[]): void => {
    expanded.add(decl);
    const here = chain[chain.length - 1]!;
    const seenHere = new Set<ts.Declaration>();
    for (const call of callsIn(fn)) {
      const callee = calleeOf(checker, call);
      if (!callee || seenHere.has(callee)) continue;
      const file = repoPath(callee.getSourceFile());
      if (!file.startsWith('src/')) continue;
      seenHere.add(callee);
      const returns = file !== here && chain.includes(file);
      const step = { depth: chain.length, file, name: nameOf(callee), returns };
      const body = bodyOf(callee);
      if (isPort(callee)) steps.push({ ...step, kind: 'port' });
      else if (!body) continue;
      else if (!file.startsWith(FOLLOWED)) steps.push({ ...step, kind: 'outside' });
      else if (expanded.has(callee)) steps.push({ ...step, kind: 'seen' });
      else {
        steps.push({ ...step, kind: 'function' });
        visit(callee, body, [...chain, file]);
      }
    }
  };
  steps.push({
    depth: 0,
    file: START.file,
    name: `${START.cls}.${START.method}`,
    kind: 'function',
    returns: false,
  });
  visit(start, start, [START.file]);
  return steps;
}

/** The followed files in the order a reader first enters them. */
export function filesInOrder(steps: readonly Step[]): string[] {
  const out: string[] = [];
  for (const s of steps) if (s.kind === 'function' && !out.includes(s.file)) out.push(s.file);
  return out;
}

const short = (file: string): string => file.replace(FOLLOWED, '');

export function treeText(steps: readonly Step[]): string {
  const lines = steps.map((s) => {
    const mark = { function: '', port: '  (port: not followed)', outside: '', seen: '  (above)' }[
      s.kind
    ];
    return `${'  '.repeat(s.depth)}${short(s.file)}  ${s.name}${mark}${s.returns ? '  ◄ RETURN to a file already left' : ''}`;
  });
  const returns = steps.filter((s) => s.returns).length;
  return [
    "One node's sync, from the queue's handler (scripts/sync-path.ts):",
    ...lines,
    '',
    `files in reading order: ${filesInOrder(steps).map(short).join(' → ')}`,
    `returns to a file already left: ${returns}`,
  ].join('\n');
}

/** The files as a Mermaid flowchart: an arrow per file that calls into another. */
export function mermaid(steps: readonly Step[]): string {
  const id = (file: string): string => short(file).replace(/[^A-Za-z0-9]/g, '_');
  const edges = new Set<string>();
  const stack: string[] = [];
  for (const s of steps) {
    stack.length = s.depth;
    const caller = stack[s.depth - 1];
    if (caller && caller !== s.file && s.kind !== 'outside')
      edges.add(
        `  ${id(caller)}["${short(caller)}"] ${s.kind === 'port' ? '-.->' : '-->'} ${id(s.file)}["${short(s.file)}"]`,
      );
    stack[s.depth] = s.file;
  }
  return ['flowchart TD', ...edges].join('\n');
}

if (import.meta.main) {
  const steps = syncPath();
  console.log(process.argv.includes('--mermaid') ? mermaid(steps) : treeText(steps));
}
