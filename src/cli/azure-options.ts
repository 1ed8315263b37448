// The fulfiller's --azure-* flags, with the environment fallbacks
// README "Commands" gives (a flag wins over its variable). Kept here so the
// fulfiller command only adds them and turns them into AzureSettings.
import { InvalidArgumentError, Option } from 'commander';
import { integerOption } from './parse.ts';
import { DEFAULT_ARM_ENDPOINT } from '../azure/arm/endpoint.ts';
import type { AzureSettings } from '../azure/settings.ts';
import {
  DEFAULT_AZURE_BURST,
  DEFAULT_AZURE_QPS,
  DEFAULT_AZURE_READ_BURST,
  DEFAULT_AZURE_READ_QPS,
  validateAzureSettings,
} from '../azure/settings.ts';

export interface AzureFlags {
  azureSubscriptionId?: string;
  azureResourceGroup?: string;
  podSubnetId?: string;
  azureEndpoint?: string;
  azureTokenFile?: string;
  azureQps?: number;
  azureBurst?: number;
  azureReadQps?: number;
  azureReadBurst?: number;
}

function positiveNumber(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
      throw new InvalidArgumentError(`${flag} must be a number > 0, got "${value}"`);
    }
    return n;
  };
}

export function azureOptions(): Option[] {
  return [
    new Option(
      '--azure-subscription-id <id>',
      "subscription of the nodes' NICs (--backend azure)",
    ).env('AZURE_SUBSCRIPTION_ID'),
    new Option('--azure-resource-group <name>', "resource group holding the nodes' NICs").env(
      'AZURE_RESOURCE_GROUP',
    ),
    new Option(
      '--pod-subnet-id <id>',
      "full ARM id of the pod subnet (without it: each node's pod IPs in its own NIC's subnet)",
    ).env('AZURE_POD_SUBNET_ID'),
    new Option(
      '--azure-endpoint <url>',
      `ARM endpoint (default ${DEFAULT_ARM_ENDPOINT}; http only to loopback)`,
    ).env('AZURE_RESOURCE_MANAGER_ENDPOINT'),
    new Option(
      '--azure-token-file <file>',
      'file holding an ARM access token (audience https://management.azure.com), re-read when it changes; ' +
        'not a service-account token (without it: DefaultAzureCredential, e.g. workload identity)',
    ),
    new Option('--azure-qps <n>', 'ARM writes per second (NIC and scale-set VM updates)')
      .argParser(positiveNumber('--azure-qps'))
      .default(DEFAULT_AZURE_QPS),
    new Option('--azure-burst <n>', 'ARM writes allowed at once')
      .argParser(integerOption('--azure-burst', 1))
      .default(DEFAULT_AZURE_BURST),
    new Option('--azure-read-qps <n>', 'ARM reads per second (GETs, lists, operation polls)')
      .argParser(positiveNumber('--azure-read-qps'))
      .default(DEFAULT_AZURE_READ_QPS),
    new Option('--azure-read-burst <n>', 'ARM reads allowed at once')
      .argParser(integerOption('--azure-read-burst', 1))
      .default(DEFAULT_AZURE_READ_BURST),
  ];
}

const REQUIRED: Array<[keyof AzureFlags, string, string]> = [
  ['azureSubscriptionId', '--azure-subscription-id', 'AZURE_SUBSCRIPTION_ID'],
  ['azureResourceGroup', '--azure-resource-group', 'AZURE_RESOURCE_GROUP'],
];

/** The settings the flags give; throws a one-line error naming the missing or bad flag. */
export function azureSettingsFromFlags(flags: AzureFlags): AzureSettings {
  for (const [key, flag, env] of REQUIRED) {
    if (!flags[key]) throw new Error(`${flag} (or ${env}) is required with --backend azure`);
  }
  const settings: AzureSettings = {
    subscriptionId: flags.azureSubscriptionId!,
    resourceGroup: flags.azureResourceGroup!,
    ...(flags.podSubnetId ? { podSubnetId: flags.podSubnetId } : {}),
    ...(flags.azureEndpoint ? { endpoint: flags.azureEndpoint } : {}),
    ...(flags.azureTokenFile ? { tokenFile: flags.azureTokenFile } : {}),
    qps: flags.azureQps ?? DEFAULT_AZURE_QPS,
    burst: flags.azureBurst ?? DEFAULT_AZURE_BURST,
    readQps: flags.azureReadQps ?? DEFAULT_AZURE_READ_QPS,
    readBurst: flags.azureReadBurst ?? DEFAULT_AZURE_READ_BURST,
  };
  validateAzureSettings(settings);
  return settings;
}
