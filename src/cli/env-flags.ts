// Flags by name from the environment: every option of a product command
// that has no variable of its own also reads POOL_MONITOR_<FLAG>
// (`--subnet` → POOL_MONITOR_SUBNET, `--metrics-listen` →
// POOL_MONITOR_METRICS_LISTEN). A flag on the command line wins over the
// variable, the variable over the default. The manifests set the settings
// an operator changes this way, so a kustomize overlay patches a container's
// `env` entry by its name (a strategic merge), never an argument by its
// position in `args` (README, "Install").
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';

export const ENV_PREFIX = 'POOL_MONITOR_';

/** POOL_MONITOR_ and the long flag in upper case, dashes made underscores. */
export const envNameOf = (long: string): string =>
  ENV_PREFIX + long.replace(/^--/, '').replace(/-/g, '_').toUpperCase();

/**
 * Gives every option of `command` that takes a value and has no environment
 * variable its POOL_MONITOR_ one. (Commander listens for an option's
 * variable only when the option is added with it, so the value is parsed
 * and set here, as commander would: through the option's parser, with the
 * source "env", and a bad value is an error naming flag and variable.)
 */
export function withEnvFallbacks(command: Command): Command {
  for (const option of command.options) {
    if (option.envVar !== undefined || option.long === undefined) continue;
    if (!option.required && !option.optional) continue; // a switch (--dry-run): flag only
    const envVar = envNameOf(option.long);
    option.env(envVar);
    command.on(`optionEnv:${option.name()}`, (raw: string) => {
      const key = option.attributeName();
      let value: unknown = raw;
      if (option.parseArg) {
        try {
          value = option.parseArg(raw, command.getOptionValue(key) as never);
        } catch (err) {
          if (!(err instanceof InvalidArgumentError)) throw err;
          command.error(
            `error: option '${option.flags}' value '${raw}' from env '${envVar}' is invalid. ${err.message}`,
            { exitCode: err.exitCode, code: 'commander.invalidArgument' },
          );
        }
      }
      command.setOptionValueWithSource(key, value, 'env');
    });
  }
  return command;
}
