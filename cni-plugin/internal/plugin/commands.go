// The plugin's commands, each from the parsed configuration, the invocation
// and a node API client to what goes on stdout (nil: nothing). The clock
// and the sleep are passed in, so every path is tested without a sidecar
// (commands_test.go).
package plugin

import (
	"fmt"
	"net/netip"
	"strings"
)

// The node API's paths and the CNS ReturnCodes the plugin reads
// (src/nodeapi/cns.ts).
const (
	pathReadyz            = "/readyz"
	pathDebugPool         = "/debug/pool"
	pathRequestIPConfigs  = "/network/requestipconfigs"
	pathReleaseIPConfigs  = "/network/releaseipconfigs"
	pathIPConfig          = "/network/ipconfig"
	pathAttachments       = "/network/attachments"
	returnSuccess         = 0
	returnNotFound        = 14
	returnFailedToAllocIP = 32
)

// runDeps are what a command needs besides its input: the node API, a clock
// and a sleep, both in milliseconds.
type runDeps struct {
	Client nodeAPIClient
	Now    func() int64
	Sleep  func(ms int64)
}

// backoffMs is the wait before retry `attempt` of "no address yet": the
// first after 100 ms, doubling to 2 s.
func backoffMs(attempt int) int64 {
	if attempt >= 5 {
		return 2000
	}
	ms := int64(100) << uint(attempt)
	if ms > 2000 {
		return 2000
	}
	return ms
}

// answerError is a non-success answer as the error the runtime sees.
func answerError(what string, answer apiAnswer) *errorResult {
	code := path(answer.Body, "response", "ReturnCode")
	message := fmt.Sprintf("HTTP %d", answer.Status)
	if m := path(answer.Body, "response", "Message"); m != nil {
		message = text(m)
	}
	switch {
	case answer.Status == 401 || answer.Status == 403:
		return cniError(codeNodeAPIRefused,
			"%s: the node API refused this plugin (HTTP %d); ipam.tokenFile must hold the sidecar's --node-api-token-file token",
			what, answer.Status)
	case answer.Status >= 500 || answer.Status == 0 || answer.Status == 429:
		return cniError(codeTryAgainLater, "%s: the node API failed: %s", what, message)
	}
	codeText := "none"
	if code != nil {
		codeText = text(code)
	}
	return cniError(codeNodeAPIError, "%s: the node API answered HTTP %d, ReturnCode %s: %s",
		what, answer.Status, codeText, message)
}

func ipConfigsBody(conf *ipamConfig, inv *invocation, pod *podRef) (object, error) {
	id, err := interfaceID(conf.Network, inv.ContainerID, inv.IfName)
	if err != nil {
		return nil, err
	}
	// DEL may come without CNI_ARGS: the release matches the interface id alone.
	context := object{{"PodName", inv.ContainerID}, {"PodNamespace", "-"}}
	if pod != nil {
		context = object{{"PodName", pod.Name}, {"PodNamespace", pod.Namespace}}
	}
	return object{
		{"podInterfaceID", id},
		{"infraContainerID", inv.ContainerID},
		{"orchestratorContext", context},
		{"desiredIPAddresses", []string{}},
	}, nil
}

func returnCode(a apiAnswer) interface{} { return path(a.Body, "response", "ReturnCode") }

// add asks the sidecar for the pod's address, waiting out ReturnCode 32
// with backoff until ipam.addTimeoutSeconds.
func add(conf *ipamConfig, inv *invocation, deps runDeps) (interface{}, error) {
	pod := podOf(inv)
	if pod == nil {
		return nil, cniError(codeInvalidEnvironment,
			"CNI_ARGS must carry K8S_POD_NAMESPACE and K8S_POD_NAME: the sidecar hands addresses to pods of its node and reclaims one whose pod it cannot find")
	}
	body, err := ipConfigsBody(conf, inv, pod)
	if err != nil {
		return nil, err
	}
	who := pod.Namespace + "/" + pod.Name
	deadline := deps.Now() + int64(conf.AddTimeoutSeconds)*1000
	for attempt := 0; ; attempt++ {
		answer, err := deps.Client.call("POST", pathRequestIPConfigs, body)
		if err != nil {
			return nil, err
		}
		code := returnCode(answer)
		if answer.Status == 200 && isNumber(code, returnSuccess) {
			return buildResult(conf, path(answer.Body, "podIPInfo"))
		}
		if answer.Status != 200 || !isNumber(code, returnFailedToAllocIP) {
			return nil, answerError("no address for "+who, answer)
		}
		wait := backoffMs(attempt)
		if deps.Now()+wait > deadline {
			message := ""
			if m := path(answer.Body, "response", "Message"); m != nil {
				message = text(m)
			}
			return nil, cniError(codeTryAgainLater, "no address for %s within %d s (ipam.addTimeoutSeconds): %s",
				who, conf.AddTimeoutSeconds, message)
		}
		deps.Sleep(wait)
	}
}

// del releases the attachment; idempotent: one the sidecar does not know is released already.
func del(conf *ipamConfig, inv *invocation, deps runDeps) (interface{}, error) {
	body, err := ipConfigsBody(conf, inv, podOf(inv))
	if err != nil {
		return nil, err
	}
	answer, err := deps.Client.call("POST", pathReleaseIPConfigs, body)
	if err != nil {
		return nil, err
	}
	if answer.Status != 200 || !isNumber(returnCode(answer), returnSuccess) {
		return nil, answerError("cannot release "+inv.ContainerID+"/"+inv.IfName, answer)
	}
	return nil, nil
}

// check looks the attachment up and compares it with the runtime's
// prevResult: every address the sidecar holds for it (one per family) is
// in the result, and the result has no other address of their subnets.
func check(conf *ipamConfig, inv *invocation, deps runDeps) (interface{}, error) {
	id, err := interfaceID(conf.Network, inv.ContainerID, inv.IfName)
	if err != nil {
		return nil, err
	}
	attachment := inv.ContainerID + "/" + inv.IfName
	answer, err := deps.Client.call("POST", pathIPConfig, object{{"podInterfaceID", id}})
	if err != nil {
		return nil, err
	}
	code := returnCode(answer)
	if answer.Status == 200 && isNumber(code, returnNotFound) {
		return nil, cniError(codeUnknownContainer, "the sidecar holds no address for %s on network %s",
			attachment, conf.Network)
	}
	if answer.Status != 200 || !isNumber(code, returnSuccess) {
		return nil, answerError("cannot check "+attachment, answer)
	}
	addresses, err := assignedOf(path(answer.Body, "podIPInfo"))
	if err != nil {
		return nil, err
	}
	if !conf.HasPrevResult {
		return nil, nil
	}
	given := addressesOf(conf.PrevResult)
	held := make([]string, len(addresses))
	for i, a := range addresses {
		held[i] = a.prefix.Addr().String()
	}
	if !sameAddresses(addresses, given) {
		has := strings.Join(given, ", ")
		if has == "" {
			has = "no address"
		}
		return nil, cniError(codeAddressMismatch, "the sidecar holds %s for %s, the runtime's result has %s",
			strings.Join(held, ", "), attachment, has)
	}
	return nil, nil
}

// sameAddresses says whether the runtime's addresses hold every address the
// sidecar assigned and no other of their subnets (an address of another
// subnet is another plugin's).
func sameAddresses(addresses []assigned, given []string) bool {
	found := map[netip.Addr]bool{}
	for _, g := range given {
		ip, err := netip.ParseAddr(g)
		if err != nil {
			continue
		}
		found[ip] = true
		for _, a := range addresses {
			if a.prefix.Masked().Contains(ip) && ip != a.prefix.Addr() {
				return false
			}
		}
	}
	for _, a := range addresses {
		if !found[a.prefix.Addr()] {
			return false
		}
	}
	return true
}

// gc releases every attachment of this network the runtime no longer
// lists. Without a list it releases nothing: a GC that says nothing of what
// is still valid must not free a running pod's address (the sidecar's leak
// collector reclaims what a lost DEL leaves). One release failing does not
// stop the others; the failures are named at the end.
func gc(conf *ipamConfig, deps runDeps) (interface{}, error) {
	if !conf.HasAttachmentList {
		return nil, nil
	}
	answer, err := deps.Client.call("POST", pathAttachments,
		object{{"podInterfaceIDPrefix", interfacePrefix(conf.Network)}})
	if err != nil {
		return nil, err
	}
	if answer.Status != 200 || !isNumber(returnCode(answer), returnSuccess) {
		return nil, answerError("cannot list the attachments", answer)
	}
	list, isArray := path(answer.Body, "attachments").([]interface{})
	if !isArray {
		return nil, cniError(codeTryAgainLater, "unexpected: the node API listed no attachments: %s",
			jsonText(answer.Body, true))
	}
	valid := map[string]bool{}
	for _, a := range conf.ValidAttachments {
		id, err := interfaceID(conf.Network, a.ContainerID, a.IfName)
		if err != nil {
			return nil, err
		}
		valid[id] = true
	}
	failures := []string{}
	// The list has an entry per address, so a dual-stack attachment twice:
	// one release frees both (DESIGN "Address families").
	released := map[string]bool{}
	for _, a := range list {
		id, _ := field(a, "podInterfaceID")
		s, isStr := id.(string)
		if isStr && (valid[s] || released[s]) {
			continue
		}
		if isStr {
			released[s] = true
		}
		if why := gcRelease(a, deps); why != "" {
			failures = append(failures, fmt.Sprintf("%s (%s)", text(id), why))
		}
	}
	if len(failures) > 0 {
		return nil, cniError(codeTryAgainLater, "GC could not release %s", strings.Join(failures, ", "))
	}
	return nil, nil
}

// gcRelease releases one listed attachment: "" when it is released, else why not.
func gcRelease(a interface{}, deps runDeps) string {
	release := object{}
	if v, ok := field(a, "podInterfaceID"); ok {
		release = append(release, kv{"podInterfaceID", v})
	}
	if v, ok := field(a, "infraContainerID"); ok {
		release = append(release, kv{"infraContainerID", v})
	}
	context := object{}
	if v, ok := field(a, "podName"); ok {
		context = append(context, kv{"PodName", v})
	}
	if v, ok := field(a, "podNamespace"); ok {
		context = append(context, kv{"PodNamespace", v})
	}
	release = append(release, kv{"orchestratorContext", context}, kv{"desiredIPAddresses", []string{}})
	answer, err := deps.Client.call("POST", pathReleaseIPConfigs, release)
	switch {
	case err != nil:
		return err.Error()
	case answer.Status != 200:
		return fmt.Sprintf("HTTP %d", answer.Status)
	case !isNumber(returnCode(answer), returnSuccess):
		message := ""
		if m := path(answer.Body, "response", "Message"); m != nil {
			message = ": " + text(m)
		}
		return fmt.Sprintf("HTTP 200, ReturnCode %s%s", text(returnCode(answer)), message)
	}
	return ""
}

// status succeeds (no output) only while the sidecar is ready and its pool can serve an ADD.
func status(deps runDeps) (interface{}, error) {
	notAvailable := func(why string) *errorResult {
		return cniError(codeNotAvailable, "pool-monitor-cni cannot serve: %s", why)
	}
	ready, err := deps.Client.call("GET", pathReadyz, nil)
	if err != nil {
		return nil, notAvailable(err.Error())
	}
	if ready.Status != 200 {
		reason := ""
		if r := path(ready.Body, "reason"); r != nil && r != "" && r != false && !isNumber(r, 0) {
			reason = ": " + text(r)
		}
		return nil, notAvailable(fmt.Sprintf("the node's sidecar is not ready (HTTP %d%s)", ready.Status, reason))
	}
	pool, err := deps.Client.call("GET", pathDebugPool, nil)
	if err != nil {
		return nil, err
	}
	exhausted, _ := path(pool.Body, "exhausted").(bool)
	if pool.Status == 200 && exhausted && isNumber(path(pool.Body, "ipCounts", "Available"), 0) {
		return nil, notAvailable("no address is free on this node and the subnet is exhausted")
	}
	return nil, nil
}

// versionResult answers for any version the runtime asks in.
func versionResult(cniVersion string) object {
	return object{{"cniVersion", cniVersion}, {"supportedVersions", supportedVersions}}
}
