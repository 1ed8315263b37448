// Names the ARM operation an HTTP request is, from its method and path, for
// metrics labels, the emulator's request log and fault matching. A bounded
// set of values: anything else is `Other`.

export const ARM_OPERATIONS = [
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

export type ArmOperation = (typeof ARM_OPERATIONS)[number];

const RG = '/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\\.Network';
const NIC_LIST = new RegExp(`^${RG}/networkInterfaces/?$`, 'i');
const NIC = new RegExp(`^${RG}/networkInterfaces/[^/]+/?$`, 'i');
const SUBNET = new RegExp(`^${RG}/virtualNetworks/[^/]+/subnets/[^/]+/?$`, 'i');
const USAGES = new RegExp(`^${RG}/virtualNetworks/[^/]+/usages/?$`, 'i');
const ASYNC_OP =
  /^\/subscriptions\/[^/]+\/providers\/Microsoft\.Network\/locations\/[^/]+\/operations\/[^/]+\/?$/i;
const COMPUTE_OP =
  /^\/subscriptions\/[^/]+\/providers\/Microsoft\.Compute\/locations\/[^/]+\/operations\/[^/]+\/?$/i;
const SS =
  '/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\\.Compute/virtualMachineScaleSets/[^/]+';
const SS_ONE = new RegExp(`^${SS}/?$`, 'i');
const SS_NICS = new RegExp(`^${SS}/networkInterfaces/?$`, 'i');
const SS_VM = new RegExp(`^${SS}/virtualMachines/[^/]+/?$`, 'i');
const SS_VM_NIC = new RegExp(`^${SS}/virtualMachines/[^/]+/networkInterfaces/[^/]+/?$`, 'i');

/** The operation of `method` on `url` (absolute or a path, query ignored). */
export function armOperationOf(method: string, url: string): ArmOperation {
  let path = url;
  if (/^https?:\/\//i.test(url)) path = new URL(url).pathname;
  else path = url.split('?')[0] ?? url;
  const m = method.toUpperCase();
  if (m === 'GET') {
    if (NIC_LIST.test(path)) return 'NetworkInterfaces.List';
    if (NIC.test(path)) return 'NetworkInterfaces.Get';
    if (ASYNC_OP.test(path)) return 'AsyncOperation.Get';
    if (SUBNET.test(path)) return 'Subnets.Get';
    if (USAGES.test(path)) return 'VirtualNetworks.ListUsage';
    if (SS_ONE.test(path)) return 'ScaleSets.Get';
    if (SS_NICS.test(path)) return 'ScaleSetNetworkInterfaces.List';
    if (SS_VM_NIC.test(path)) return 'ScaleSetNetworkInterfaces.Get';
    if (SS_VM.test(path)) return 'ScaleSetVMs.Get';
    if (COMPUTE_OP.test(path)) return 'ComputeOperation.Get';
  }
  if (m === 'PUT' && NIC.test(path)) return 'NetworkInterfaces.CreateOrUpdate';
  if (m === 'PUT' && SS_VM.test(path)) return 'ScaleSetVMs.Update';
  if (m === 'PUT' && SS_VM_NIC.test(path)) return 'ScaleSetNetworkInterfaces.CreateOrUpdate';
  return 'Other';
}
