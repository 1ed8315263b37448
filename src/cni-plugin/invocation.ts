// The CNI_* environment of one invocation, and the attachment it names as
// the sidecar's interface id. Pure.
import { CniCode, CniError } from './errors.ts';

export type Command = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'GC' | 'STATUS';
const COMMANDS: readonly Command[] = ['ADD', 'DEL', 'CHECK', 'VERSION', 'GC', 'STATUS'];

export interface Invocation {
  command: Command;
  containerID?: string;
  ifname?: string;
  netns?: string;
  /** K8S_POD_NAMESPACE, K8S_POD_NAME, ... from CNI_ARGS. */
  args: Record<string, string>;
}

/** `K=V;K2=V2` as the runtime passes CNI_ARGS. */
export function parseCniArgs(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0) out[part.slice(0, at)] = part.slice(at + 1);
  }
  return out;
}

const bad = (name: string, why: string): CniError =>
  new CniError(CniCode.InvalidEnvironment, `${name} ${why}`);

export function parseInvocation(env: Record<string, string | undefined>): Invocation {
  const command = env.CNI_COMMAND;
  if (!command) throw bad('CNI_COMMAND', `is not set (one of ${COMMANDS.join(', ')})`);
  if (!(COMMANDS as readonly string[]).includes(command))
    throw bad('CNI_COMMAND', `${JSON.stringify(command)} is not one of ${COMMANDS.join(', ')}`);
  const inv: Invocation = { command: command as Command, args: parseCniArgs(env.CNI_ARGS) };
  if (env.CNI_CONTAINERID) inv.containerID = env.CNI_CONTAINERID;
  if (env.CNI_IFNAME) inv.ifname = env.CNI_IFNAME;
  if (env.CNI_NETNS) inv.netns = env.CNI_NETNS;
  const needs = command === 'ADD' || command === 'DEL' || command === 'CHECK';
  if (needs && !inv.containerID) throw bad('CNI_CONTAINERID', `is required for ${command}`);
  if (needs && !inv.ifname) throw bad('CNI_IFNAME', `is required for ${command}`);
  if ((command === 'ADD' || command === 'CHECK') && !inv.netns)
    throw bad('CNI_NETNS', `is required for ${command}`);
  if (inv.containerID !== undefined && !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(inv.containerID))
    throw bad('CNI_CONTAINERID', 'may hold only letters, digits, _ . -');
  return inv;
}

/** Every attachment of a network starts with this in the sidecar's store. */
export function interfacePrefix(network: string): string {
  return `cni/${network}/`;
}

/**
 * The sidecar's podInterfaceID for the attachment (containerID, ifname) of
 * a network: unique per attachment, and a network's attachments share a
 * prefix, so GC can list them.
 */
export function interfaceID(network: string, containerID: string, ifname: string): string {
  const id = `${interfacePrefix(network)}${containerID}/${ifname}`;
  if (id.length > 256)
    throw bad(
      'CNI_CONTAINERID',
      `with the network name and CNI_IFNAME makes an id over 256 characters`,
    );
  return id;
}

/** The pod the attachment is for, from CNI_ARGS (the Kubernetes runtimes pass them). */
export function podOf(inv: Invocation): { podName: string; podNamespace: string } | undefined {
  const podName = inv.args.K8S_POD_NAME;
  const podNamespace = inv.args.K8S_POD_NAMESPACE;
  return podName && podNamespace ? { podName, podNamespace } : undefined;
}
