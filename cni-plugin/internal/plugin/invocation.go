// The CNI_* environment of one invocation, and the attachment it names as
// the sidecar's interface id. Pure.
package plugin

import (
	"regexp"
	"strings"
	"unicode/utf16"
)

// commands are the CNI commands this plugin answers.
var commands = []string{"ADD", "DEL", "CHECK", "VERSION", "GC", "STATUS"}

// invocation is the runtime's environment, checked.
type invocation struct {
	Command     string
	ContainerID string
	IfName      string
	Netns       string
	// K8S_POD_NAMESPACE, K8S_POD_NAME, ... from CNI_ARGS.
	Args map[string]string
}

// parseCniArgs reads `K=V;K2=V2` as the runtime passes CNI_ARGS.
func parseCniArgs(text string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(text, ";") {
		if at := strings.IndexByte(part, '='); at > 0 {
			out[part[:at]] = part[at+1:]
		}
	}
	return out
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func badEnv(name, why string) *errorResult {
	return cniError(codeInvalidEnvironment, "%s %s", name, why)
}

// parseInvocation checks the CNI_* variables the command needs.
func parseInvocation(env func(string) string) (*invocation, error) {
	command := env("CNI_COMMAND")
	list := strings.Join(commands, ", ")
	if command == "" {
		return nil, badEnv("CNI_COMMAND", "is not set (one of "+list+")")
	}
	known := false
	for _, c := range commands {
		known = known || c == command
	}
	if !known {
		return nil, badEnv("CNI_COMMAND", jsonText(command, true)+" is not one of "+list)
	}
	inv := &invocation{
		Command:     command,
		ContainerID: env("CNI_CONTAINERID"),
		IfName:      env("CNI_IFNAME"),
		Netns:       env("CNI_NETNS"),
		Args:        parseCniArgs(env("CNI_ARGS")),
	}
	needs := command == "ADD" || command == "DEL" || command == "CHECK"
	if needs && inv.ContainerID == "" {
		return nil, badEnv("CNI_CONTAINERID", "is required for "+command)
	}
	if needs && inv.IfName == "" {
		return nil, badEnv("CNI_IFNAME", "is required for "+command)
	}
	if (command == "ADD" || command == "CHECK") && inv.Netns == "" {
		return nil, badEnv("CNI_NETNS", "is required for "+command)
	}
	if inv.ContainerID != "" && !namePattern.MatchString(inv.ContainerID) {
		return nil, badEnv("CNI_CONTAINERID", "may hold only letters, digits, _ . -")
	}
	return inv, nil
}

// interfacePrefix starts every attachment of a network in the sidecar's store.
func interfacePrefix(network string) string {
	return "cni/" + network + "/"
}

// interfaceID is the sidecar's podInterfaceID for the attachment
// (containerID, ifname) of a network: unique per attachment, and a
// network's attachments share a prefix, so GC can list them. At most 256
// characters (UTF-16 units, as the node API counts them).
func interfaceID(network, containerID, ifname string) (string, error) {
	id := interfacePrefix(network) + containerID + "/" + ifname
	if len(utf16.Encode([]rune(id))) > 256 {
		return "", badEnv("CNI_CONTAINERID", "with the network name and CNI_IFNAME makes an id over 256 characters")
	}
	return id, nil
}

// podRef is the pod an attachment is for.
type podRef struct {
	Name      string
	Namespace string
}

// podOf is the pod from CNI_ARGS (the Kubernetes runtimes pass them), or nil.
func podOf(inv *invocation) *podRef {
	name, namespace := inv.Args["K8S_POD_NAME"], inv.Args["K8S_POD_NAMESPACE"]
	if name == "" || namespace == "" {
		return nil
	}
	return &podRef{Name: name, Namespace: namespace}
}
