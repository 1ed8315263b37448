// `pool-monitor apiserver`: the local Kubernetes API server as a command,
// serving until SIGINT/SIGTERM. Plain HTTP, anonymous and AlwaysAllow by
// default (the quick demo); --tls, --token-auth-file and
// --authorization-mode RBAC make it as strict as a real cluster.
import { Command, InvalidArgumentError, Option } from 'commander';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { parseFeatureGates, type FeatureGates } from '../apiserver/auth/feature-gates.ts';
import { AUTHORIZATION_MODES, type AuthorizationMode } from '../apiserver/auth/modes.ts';
import { listenError, untilSignal } from '../../src/cli/signals.ts';

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError('must be a port number 0..65535');
  return n;
}

function parseSeconds(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('must be a number of seconds >= 0');
  return n;
}

function parseQuarantineSeconds(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('must be a number of seconds >= 0');
  return n;
}

function parseBool(v: string): boolean {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new InvalidArgumentError('must be true or false');
}

interface ApiserverFlags {
  port: number;
  crds?: string;
  kubeconfig?: string;
  tls?: boolean;
  tokenAuthFile?: string;
  authorizationMode: AuthorizationMode;
  anonymous?: boolean;
  featureGates?: FeatureGates;
  garbageCollector?: boolean;
  podGc?: boolean;
  podGcOrphanSeconds?: number;
  bookmarkInterval?: number;
}

function parseGates(v: string): FeatureGates {
  try {
    return parseFeatureGates(v);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function apiserverCommand(): Command {
  return new Command('apiserver')
    .description('Serve a local Kubernetes API on 127.0.0.1 until SIGINT/SIGTERM')
    .addOption(
      new Option('--port <port>', 'port to listen on, on 127.0.0.1')
        .argParser(parsePort)
        .default(0, '0, a free one'),
    )
    .option(
      '--crds <dir>',
      'apply every CustomResourceDefinition in the YAML files of DIR at start',
    )
    .option('--kubeconfig <file>', 'where to write the kubeconfig for clients')
    .option('--tls', 'serve HTTPS with a CA made at start (written into the kubeconfig)')
    .option('--token-auth-file <csv>', 'static bearer tokens: token,user,uid,"group1,group2"')
    .addOption(
      new Option('--authorization-mode <mode>', 'who may do what')
        .choices(AUTHORIZATION_MODES)
        .default('AlwaysAllow'),
    )
    .option(
      '--anonymous <bool>',
      'allow requests without credentials as system:anonymous (default: true without --token-auth-file)',
      parseBool,
    )
    .option(
      '--feature-gates <gates>',
      'Name=bool,... of: ServiceAccountTokenNodeBinding (default true, as 1.31+)',
      parseGates,
    )
    .option(
      '--bookmark-interval <seconds>',
      "watch bookmarks' period (default 60, kube-apiserver's; 0: none); shorter for tests",
      parseSeconds,
    )
    .option(
      '--garbage-collector <bool>',
      "kube-controller-manager's owner-reference garbage collector and DELETE's propagationPolicy (default true)",
      parseBool,
    )
    .option(
      '--pod-gc <bool>',
      'delete pods bound to a Node missing for --pod-gc-orphan-seconds (default true)',
      parseBool,
    )
    .option(
      '--pod-gc-orphan-seconds <seconds>',
      "how long a Node must be missing before its pods are deleted (default 40, kube-controller-manager's)",
      parseQuarantineSeconds,
    )
    .action(async (opts: ApiserverFlags) => {
      if (opts.crds !== undefined && !(existsSync(opts.crds) && statSync(opts.crds).isDirectory()))
        throw new Error(`--crds: ${opts.crds} is not a directory`);
      if (opts.tokenAuthFile !== undefined) {
        const { parseTokenFile } = await import('../apiserver/auth/token-file.ts');
        if (!existsSync(opts.tokenAuthFile))
          throw new Error(`--token-auth-file: ${opts.tokenAuthFile}: file not found`);
        try {
          parseTokenFile(readFileSync(opts.tokenAuthFile, 'utf8'));
        } catch (err) {
          throw new Error(`--token-auth-file: ${opts.tokenAuthFile}: ${(err as Error).message}`);
        }
      }
      const [{ startApiServer }, { createLogger }] = await Promise.all([
        import('../apiserver/server.ts'),
        import('../../src/log/logger.ts'),
      ]);
      const logger = createLogger();
      const signalled = untilSignal();
      const server = await startApiServer({
        port: opts.port,
        logger,
        tls: opts.tls === true,
        authorizationMode: opts.authorizationMode,
        ...(opts.anonymous !== undefined ? { anonymous: opts.anonymous } : {}),
        ...(opts.featureGates !== undefined ? { featureGates: opts.featureGates } : {}),
        ...(opts.tokenAuthFile !== undefined ? { tokenAuthFile: opts.tokenAuthFile } : {}),
        ...(opts.crds !== undefined ? { crdsDir: opts.crds } : {}),
        ...(opts.kubeconfig !== undefined ? { kubeconfigPath: opts.kubeconfig } : {}),
        ...(opts.garbageCollector !== undefined ? { garbageCollector: opts.garbageCollector } : {}),
        ...(opts.podGc !== undefined ? { podGc: opts.podGc } : {}),
        ...(opts.podGcOrphanSeconds !== undefined
          ? { podGcOrphanMs: opts.podGcOrphanSeconds * 1000 }
          : {}),
        ...(opts.bookmarkInterval !== undefined
          ? { bookmarkIntervalMs: opts.bookmarkInterval * 1000 }
          : {}),
      }).catch((err: unknown) => {
        throw listenError('--port', opts.port, err);
      });
      await signalled;
      await server.close();
      logger.end();
    });
}
