// Types of layers.js (plain JS, so that eslint.config.js can load it).
export function partOf(repoPath: string): 'harness' | 'cli' | 'product' | undefined;
export function packageOf(specifier: string): string;
export function layerViolation(file: string, specifier: string): string | undefined;
declare const plugin: { rules: Record<string, unknown> };
export default plugin;
