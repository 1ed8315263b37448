// Loaded with `--import`: records every module the process resolves and
// writes the list (one URL a line) to $RECORD_IMPORTS_FILE at exit. Lets a
// test see what a command loads without instrumenting the product.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const seen = new Set<string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    seen.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => {
  const file = process.env.RECORD_IMPORTS_FILE;
  if (file) writeFileSync(file, [...seen].join('\n'));
});
