// The log levels, apart from winston: command-line parsing needs them without
// loading the logger (bin/pool-monitor --help loads no sub-command's code).
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];
