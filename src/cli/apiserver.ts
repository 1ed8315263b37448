// `pool-monitor apiserver`: the local Kubernetes API server as a command,
// serving until SIGINT/SIGTERM.
import { Command, InvalidArgumentError } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { startApiServer } from '../apiserver/server.ts';
import { createLogger } from '../log/logger.ts';

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError('must be a port number 0..65535');
  return n;
}

export function apiserverCommand(): Command {
  return new Command('apiserver')
    .description('Serve a local Kubernetes API on 127.0.0.1 (plain HTTP) until SIGINT/SIGTERM')
    .option('--port <port>', 'port to listen on (0 picks a free one)', parsePort, 0)
    .option(
      '--crds <dir>',
      'apply every CustomResourceDefinition in the YAML files of DIR at start',
    )
    .option('--kubeconfig <file>', 'where to write the kubeconfig for clients')
    .action(async (opts: { port: number; crds?: string; kubeconfig?: string }) => {
      if (opts.crds !== undefined && !(existsSync(opts.crds) && statSync(opts.crds).isDirectory()))
        throw new Error(`--crds: ${opts.crds} is not a directory`);
      const logger = createLogger();
      const server = await startApiServer({
        port: opts.port,
        logger,
        ...(opts.crds !== undefined ? { crdsDir: opts.crds } : {}),
        ...(opts.kubeconfig !== undefined ? { kubeconfigPath: opts.kubeconfig } : {}),
      });
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void server.close().then(resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      logger.end();
    });
}
