// Writing a NIC's ipConfigurations through the real @azure/arm-network client,
// as the emulator's rule tests do: a secondary ipConfiguration, the NIC as
// read with more of them, and a PUT whose refusal is its result (ARM's
// status, code and message), so that a test says what ARM answered and then
// that nothing changed.
import type {
  NetworkInterface,
  NetworkInterfaceIPConfiguration,
  NetworkInterfacesCreateOrUpdateOptionalParams,
  NetworkManagementClient,
} from '@azure/arm-network';
import { RG } from './helpers.ts';

/** What ARM refused a call with; `{}` when it took it. */
export type Failure = { statusCode?: number; code?: string; message?: string };

/** The call's refusal, or `{}` when it succeeded. */
export const failure = (p: Promise<unknown>): Promise<Failure> =>
  p.then(
    () => ({}),
    (e: unknown) => e as Failure,
  );

/** A Dynamic, non-primary ipConfiguration `name` in `subnetId`; `extra` adds or overrides. */
export function secondary(
  name: string,
  subnetId: string,
  extra: Partial<NetworkInterfaceIPConfiguration> = {},
): NetworkInterfaceIPConfiguration {
  return {
    name,
    privateIPAllocationMethod: 'Dynamic',
    subnet: { id: subnetId },
    primary: false,
    ...extra,
  };
}

/** The NIC as read, with `configs` after its ipConfigurations. */
export const withConfigs = (
  nic: NetworkInterface,
  ...configs: NetworkInterfaceIPConfiguration[]
): NetworkInterface => ({
  ...nic,
  ipConfigurations: [...(nic.ipConfigurations ?? []), ...configs],
});

/** PUTs `body` as the NIC `nicName` of RG: `{}` when ARM took it, else its refusal. */
export const tryPut = (
  client: NetworkManagementClient,
  nicName: string,
  body: NetworkInterface,
  options?: NetworkInterfacesCreateOrUpdateOptionalParams,
): Promise<Failure> => failure(client.networkInterfaces.createOrUpdate(RG, nicName, body, options));
