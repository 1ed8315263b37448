// The name of each request the emulator serves, from its method and path:
// the key of its request log, of injected faults and of its authorization.
// The emulator's own naming (it shares none with the product); the names
// follow the REST API's operation groups (`NetworkInterfaces_CreateOrUpdate`
// in the Microsoft.Network spec, `VirtualMachineScaleSetVMs_Update` in
// Microsoft.Compute's) so a log reads like ARM's.

export const OPERATIONS = [
  'NetworkInterfaces.List',
  'NetworkInterfaces.Get',
  'NetworkInterfaces.CreateOrUpdate',
  'AsyncOperation.Get',
  'Subnets.Get',
  'VirtualNetworks.ListUsage',
  'ScaleSets.Get',
  'ScaleSetNetworkInterfaces.List',
  'ScaleSetNetworkInterfaces.Get',
  'ScaleSetNetworkInterfaces.CreateOrUpdate',
  'ScaleSetVMs.Get',
  'ScaleSetVMs.Update',
  'ComputeOperation.Get',
  'Other',
] as const;

export type OperationName = (typeof OPERATIONS)[number];

const NET = '/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\\.Network';
const SS =
  '/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\\.Compute/virtualMachineScaleSets/[^/]+';
const ROUTES: Array<[string, RegExp, OperationName]> = [
  ['GET', new RegExp(`^${NET}/networkInterfaces/?$`, 'i'), 'NetworkInterfaces.List'],
  ['GET', new RegExp(`^${NET}/networkInterfaces/[^/]+/?$`, 'i'), 'NetworkInterfaces.Get'],
  [
    'PUT',
    new RegExp(`^${NET}/networkInterfaces/[^/]+/?$`, 'i'),
    'NetworkInterfaces.CreateOrUpdate',
  ],
  [
    'GET',
    /^\/subscriptions\/[^/]+\/providers\/Microsoft\.Network\/locations\/[^/]+\/operations\/[^/]+\/?$/i,
    'AsyncOperation.Get',
  ],
  ['GET', new RegExp(`^${NET}/virtualNetworks/[^/]+/subnets/[^/]+/?$`, 'i'), 'Subnets.Get'],
  ['GET', new RegExp(`^${NET}/virtualNetworks/[^/]+/usages/?$`, 'i'), 'VirtualNetworks.ListUsage'],
  ['GET', new RegExp(`^${SS}/?$`, 'i'), 'ScaleSets.Get'],
  ['GET', new RegExp(`^${SS}/networkInterfaces/?$`, 'i'), 'ScaleSetNetworkInterfaces.List'],
  [
    'GET',
    new RegExp(`^${SS}/virtualMachines/[^/]+/networkInterfaces/[^/]+/?$`, 'i'),
    'ScaleSetNetworkInterfaces.Get',
  ],
  [
    'PUT',
    new RegExp(`^${SS}/virtualMachines/[^/]+/networkInterfaces/[^/]+/?$`, 'i'),
    'ScaleSetNetworkInterfaces.CreateOrUpdate',
  ],
  ['GET', new RegExp(`^${SS}/virtualMachines/[^/]+/?$`, 'i'), 'ScaleSetVMs.Get'],
  ['PUT', new RegExp(`^${SS}/virtualMachines/[^/]+/?$`, 'i'), 'ScaleSetVMs.Update'],
  [
    'GET',
    /^\/subscriptions\/[^/]+\/providers\/Microsoft\.Compute\/locations\/[^/]+\/operations\/[^/]+\/?$/i,
    'ComputeOperation.Get',
  ],
];

/** The operation `method` on `path` is (query ignored); `Other` when the emulator serves none. */
export function operationOf(method: string, path: string): OperationName {
  const m = method.toUpperCase();
  const p = path.split('?')[0]!;
  return ROUTES.find(([verb, re]) => verb === m && re.test(p))?.[2] ?? 'Other';
}
