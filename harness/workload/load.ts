// `--scenario NAME|FILE`: a built-in name, else a YAML or JSON file (YAML is a
// superset of JSON, so one parser reads both). Errors are one line and name
// the file and the field.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { BUILT_IN_TRACES } from '../../src/sim/trace.ts';
import { BUILT_IN_SCENARIO_NAMES, builtInScenario } from './builtins.ts';
import { parseScenario, ScenarioError, type Scenario } from './scenario.ts';
import { errorText } from '../../src/log/error-text.ts';

/** Parses scenario text (YAML or JSON); `source` names it in errors. */
export function parseScenarioText(text: string, source: string): Scenario {
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: false, uniqueKeys: true });
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new ScenarioError(`${source}: not valid YAML or JSON: ${message}`);
  }
  return parseScenario(doc, source);
}

export interface LoadScenarioOptions {
  readFile?: (path: string) => string;
}

/** A built-in scenario by name, else the file at `nameOrPath`. */
export function loadScenario(nameOrPath: string, options: LoadScenarioOptions = {}): Scenario {
  const builtIn = builtInScenario(nameOrPath);
  if (builtIn) return builtIn;
  const read = options.readFile ?? ((p: string) => readFileSync(p, 'utf8'));
  let text: string;
  try {
    text = read(nameOrPath);
  } catch (err) {
    const code = (err as { code?: string }).code;
    const looksLikeName = !/[./\\]/.test(nameOrPath);
    if (code === 'ENOENT' && looksLikeName) {
      const names = BUILT_IN_SCENARIO_NAMES.join(', ');
      if (Object.hasOwn(BUILT_IN_TRACES, nameOrPath)) {
        throw new ScenarioError(
          `"${nameOrPath}" is a demand trace of bin/pool-monitor simulate; the embedded cluster runs ${names} or a YAML/JSON file`,
        );
      }
      throw new ScenarioError(
        `unknown scenario "${nameOrPath}": use one of ${names} or a YAML/JSON file`,
      );
    }
    throw new ScenarioError(
      `scenario file ${nameOrPath}: ${code === 'ENOENT' ? 'file not found' : errorText(err)}`,
    );
  }
  return parseScenarioText(text, nameOrPath);
}
