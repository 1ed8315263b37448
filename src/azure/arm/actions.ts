// The one list of the ARM actions the Azure backend needs, call by call,
// each as Azure's resource provider operations page names it ("Azure
// permissions for Networking" and "Azure permissions for Compute",
// learn.microsoft.com/azure/role-based-access-control/permissions/): the
// README's role table is checked against ROLE_ROWS
// (test/azure/readme-roles.test.ts). The ARM emulator does not read this
// list: it authorizes from Azure's published operations on its own
// (harness/azure-emulator/authorization.ts), so a row missing here is a 403
// there, as on ARM.
import type { ArmOperation } from './operations.ts';

/** The action each call needs, on the resource (or list) the call names. */
export const CALL_ACTIONS: Partial<Record<ArmOperation, string>> = {
  // "Microsoft.Network/networkInterfaces/read: Gets a network interface definition."
  'NetworkInterfaces.List': 'Microsoft.Network/networkInterfaces/read',
  'NetworkInterfaces.Get': 'Microsoft.Network/networkInterfaces/read',
  // "Microsoft.Network/networkInterfaces/write: Creates a network interface or updates an existing network interface."
  'NetworkInterfaces.CreateOrUpdate': 'Microsoft.Network/networkInterfaces/write',
  // "Microsoft.Network/locations/operations/read: Gets Operation Resource that represents status of an asynchronous operation"
  'AsyncOperation.Get': 'Microsoft.Network/locations/operations/read',
  // "Microsoft.Network/virtualNetworks/subnets/read: Gets a virtual network subnet definition"
  'Subnets.Get': 'Microsoft.Network/virtualNetworks/subnets/read',
  // "Microsoft.Network/virtualNetworks/usages/read: Get the IP usage for each subnet of the virtual network"
  'VirtualNetworks.ListUsage': 'Microsoft.Network/virtualNetworks/usages/read',
  // "Microsoft.Compute/virtualMachineScaleSets/read: Get the properties of a Virtual Machine Scale Set"
  'ScaleSets.Get': 'Microsoft.Compute/virtualMachineScaleSets/read',
  // "Microsoft.Compute/virtualMachineScaleSets/networkInterfaces/read: Get properties of all network interfaces of a virtual machine scale set"
  'ScaleSetNetworkInterfaces.List':
    'Microsoft.Compute/virtualMachineScaleSets/networkInterfaces/read',
  // "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read: Get properties of one or all network interfaces of a virtual machine created using Virtual Machine Scale Set"
  'ScaleSetNetworkInterfaces.Get':
    'Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read',
  // "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read: Retrieves the properties of a Virtual Machine in a VM Scale Set"
  'ScaleSetVMs.Get': 'Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read',
  // "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write: Updates the properties of a Virtual Machine in a VM Scale Set"
  'ScaleSetVMs.Update': 'Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write',
  // "Microsoft.Compute/locations/operations/read: Gets the status of an asynchronous operation"
  'ComputeOperation.Get': 'Microsoft.Compute/locations/operations/read',
};

/**
 * Linked authorization: a write (NIC PUT, scale-set VM update) needs these on
 * every resource its body references, by the property that references it
 * (ARM answers 403 LinkedAuthorizationFailed otherwise; e.g.
 * kubernetes-sigs/cloud-provider-azure#1999 for the backend pool).
 */
export const LINKED_ACTIONS = {
  // "Joins a virtual machine to a virtual network"
  subnet: 'Microsoft.Network/virtualNetworks/subnets/join/action',
  // "Joins a load balancer backend address pool. Not Alertable."
  loadBalancerBackendAddressPools:
    'Microsoft.Network/loadBalancers/backendAddressPools/join/action',
  // "Joins a load balancer inbound nat rule. Not Alertable."
  loadBalancerInboundNatRules: 'Microsoft.Network/loadBalancers/inboundNatRules/join/action',
  // "Joins a load balancer inbound NAT pool. Not alertable." (a Uniform scale set's network profile)
  loadBalancerInboundNatPools: 'Microsoft.Network/loadBalancers/inboundNatPools/join/action',
  // "Joins a network security group. Not Alertable."
  networkSecurityGroup: 'Microsoft.Network/networkSecurityGroups/join/action',
  // "Joins a public IP address. Not Alertable."
  publicIPAddress: 'Microsoft.Network/publicIPAddresses/join/action',
  // "Joins an IP Configuration to Application Security Groups. Not alertable."
  applicationSecurityGroups:
    'Microsoft.Network/applicationSecurityGroups/joinIpConfiguration/action',
  // "Joins an application gateway backend address pool. Not Alertable."
  applicationGatewayBackendAddressPools:
    'Microsoft.Network/applicationGateways/backendAddressPools/join/action',
} as const;

export type LinkedProperty = keyof typeof LINKED_ACTIONS;

/** A row of the README's role table: an action, where it must be granted, and for what. */
export interface RoleRow {
  action: string;
  /** With the README's placeholders: SUB, NODES_RG, POD_SUBNET_ID, VNET_ID. */
  scope: string;
  for: string;
}

const RG = '/subscriptions/SUB/resourceGroups/NODES_RG';

/**
 * What the fulfiller's identity needs, no more: every CALL_ACTIONS value and
 * the linked actions the NICs it writes reference (cloud-provider-azure puts
 * nodes in its load balancer's pools and NSG; the backend copies the
 * primary's ASGs; a node may have a public IP), at the scopes the calls use.
 */
export const ROLE_ROWS: readonly RoleRow[] = [
  { action: CALL_ACTIONS['NetworkInterfaces.Get']!, scope: RG, for: 'the NIC list and reads' },
  { action: CALL_ACTIONS['NetworkInterfaces.CreateOrUpdate']!, scope: RG, for: 'the NIC `PUT`' },
  {
    action: CALL_ACTIONS['AsyncOperation.Get']!,
    scope: RG,
    for: "following the `PUT`'s operation (ARM authorizes the poll at the resource group)",
  },
  {
    action: LINKED_ACTIONS.subnet,
    scope: 'POD_SUBNET_ID',
    for: 'ipConfigurations in the pod subnet (linked)',
  },
  { action: CALL_ACTIONS['Subnets.Get']!, scope: 'POD_SUBNET_ID', for: "the pod subnet's prefix" },
  {
    action: CALL_ACTIONS['VirtualNetworks.ListUsage']!,
    scope: 'VNET_ID',
    for: "the subnet's usage (`virtualNetworks/usages`)",
  },
  {
    action: LINKED_ACTIONS.applicationSecurityGroups,
    scope: RG,
    for: "the ASGs of the NIC's ipConfigurations, sent back by each write (linked; the ASGs' resource group)",
  },
  {
    action: LINKED_ACTIONS.loadBalancerBackendAddressPools,
    scope: RG,
    for: "the load balancer pools cloud-provider-azure put the node's primary ipConfiguration in (linked; the load balancers' resource group)",
  },
  {
    action: LINKED_ACTIONS.loadBalancerInboundNatRules,
    scope: RG,
    for: "the load balancer inbound NAT rules a node's primary ipConfiguration is in (an SSH rule; linked)",
  },
  {
    action: LINKED_ACTIONS.loadBalancerInboundNatPools,
    scope: RG,
    for: "a Uniform scale set's inbound NAT pools, in the network profile each update sends back (linked)",
  },
  {
    action: LINKED_ACTIONS.applicationGatewayBackendAddressPools,
    scope: RG,
    for: "the application gateway backend pools a node's NIC is in (linked; the gateways' resource group)",
  },
  {
    action: LINKED_ACTIONS.networkSecurityGroup,
    scope: RG,
    for: "the NIC's network security group (linked; the NSG's resource group)",
  },
  {
    action: LINKED_ACTIONS.publicIPAddress,
    scope: RG,
    for: "a node's public IP, when its NIC has one (linked; the public IPs' resource group)",
  },
  {
    action: CALL_ACTIONS['ScaleSets.Get']!,
    scope: RG,
    for: "a Uniform scale set's upgrade policy (nodes of one not Manual are refused)",
  },
  {
    action: CALL_ACTIONS['ScaleSetVMs.Get']!,
    scope: RG,
    for: 'Uniform scale-set instances (their model and etag)',
  },
  {
    action: CALL_ACTIONS['ScaleSetNetworkInterfaces.Get']!,
    scope: RG,
    for: "a Uniform instance's NIC",
  },
  {
    action: CALL_ACTIONS['ScaleSetNetworkInterfaces.List']!,
    scope: RG,
    for: "a Uniform scale set's NICs (the list)",
  },
  {
    action: CALL_ACTIONS['ScaleSetVMs.Update']!,
    scope: RG,
    for: 'their network profile (only it, with `If-Match`)',
  },
  {
    action: CALL_ACTIONS['ComputeOperation.Get']!,
    scope: RG,
    for: "following their update's operation",
  },
];

/** ROLE_ROWS as the README's markdown table. */
export function roleTable(): string {
  return [
    '| Action | Scope | For |',
    '| --- | --- | --- |',
    ...ROLE_ROWS.map((r) => `| \`${r.action}\` | \`${r.scope}\` | ${r.for} |`),
  ].join('\n');
}

/**
 * ROLE_ROWS as a custom role (`az role definition create --role-definition
 * @manifests/azure/role-definition.json`), its AssignableScopes with the
 * README's placeholders: assign it at NODES_RG and at VNET_ID, or assign each
 * action at its row's scope for the narrowest grant.
 */
export function roleDefinition(): Record<string, unknown> {
  return {
    Name: 'ipam-pool-monitor fulfiller',
    IsCustom: true,
    Description:
      "The ARM actions the ipam-pool-monitor fulfiller's Azure backend needs (README, On Azure; src/azure/arm/actions.ts).",
    Actions: [...new Set(ROLE_ROWS.map((r) => r.action))],
    NotActions: [],
    DataActions: [],
    NotDataActions: [],
    AssignableScopes: ['/subscriptions/SUB/resourceGroups/NODES_RG', 'VNET_ID'],
  };
}
