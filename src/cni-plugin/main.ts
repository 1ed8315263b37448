// pool-monitor-cni: a CNI IPAM plugin (spec 1.0.0 and 1.1.0) whose addresses
// come from the node's pool-monitor sidecar over its node API. Invoked by
// the runtime (or a main plugin delegating IPAM) with CNI_* in the
// environment and the network configuration on stdin; writes the result or
// the error JSON on stdout, exits 0 or 1. entry.ts is the process around it.
import { nodeApiClient } from './client.ts';
import { add, check, del, gc, status, version } from './commands.ts';
import type { CommandDeps } from './commands.ts';
import { parseConfig, parseJson, versionOf } from './config.ts';
import { CniCode, CniError } from './errors.ts';
import { parseInvocation } from './invocation.ts';

/** One invocation: what to print and the exit status. */
export async function run(
  env: Record<string, string | undefined>,
  stdin: () => string,
  deps: Partial<CommandDeps> = {},
): Promise<{ out: unknown; code: number }> {
  let cniVersion = '1.1.0';
  try {
    const inv = parseInvocation(env);
    const raw = parseJson(stdin());
    if (inv.command === 'VERSION') {
      // Any version the runtime speaks may ask which ones this plugin does.
      const asked = typeof raw.cniVersion === 'string' ? raw.cniVersion : cniVersion;
      return { out: version(asked), code: 0 };
    }
    cniVersion = typeof raw.cniVersion === 'string' ? raw.cniVersion : cniVersion;
    cniVersion = versionOf(raw);
    const conf = parseConfig(raw);
    const full: CommandDeps = {
      client: deps.client ?? nodeApiClient(conf),
      now: deps.now ?? Date.now,
      sleep: deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
    };
    const commands = {
      ADD: () => add(conf, inv, full),
      DEL: () => del(conf, inv, full),
      CHECK: () => check(conf, inv, full),
      GC: () => gc(conf, full),
      STATUS: () => status(full),
    };
    return { out: await commands[inv.command](), code: 0 };
  } catch (err) {
    const e =
      err instanceof CniError
        ? err
        : new CniError(CniCode.TryAgainLater, `unexpected: ${(err as Error).message}`);
    return { out: e.toJSON(cniVersion), code: 1 };
  }
}
