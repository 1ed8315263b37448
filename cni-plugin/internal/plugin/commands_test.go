// The commands against a fake node API: ADD's request and its wait for "no
// address yet" within its deadline, the codes of the node API's refusals,
// DEL's idempotence, CHECK, GC, STATUS and VERSION.
package plugin

import (
	"strings"
	"testing"
)

func TestAddAsksWithTheAttachmentAndThePodAndPrintsTheResult(t *testing.T) {
	api := always(ok())
	out, code := invoke(baseEnv, conf(nil, nil), api)
	if code != 0 {
		t.Fatalf("exit %d: %v", code, plain(t, out))
	}
	ips, _ := field(plain(t, out), "ips")
	if a := path(first(ips), "address"); a != "10.10.0.7/16" {
		t.Fatalf("address %v", a)
	}
	if api.calls[0].Path != "/network/requestipconfigs" || api.calls[0].Method != "POST" {
		t.Fatalf("call %+v", api.calls[0])
	}
	sameJSON(t, api.calls[0].Body, `{
		"podInterfaceID": "cni/net-a/c1/eth0",
		"infraContainerID": "c1",
		"orchestratorContext": {"PodName": "web-1", "PodNamespace": "default"},
		"desiredIPAddresses": []
	}`)
}

func TestAddWaitsOutReturnCode32WithBackoffAndGivesUpWith11AtItsDeadline(t *testing.T) {
	n := 0
	noIP := answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 32, "Message": "none free"}}`)
	later := fake(func(string, interface{}) apiAnswer {
		n++
		if n < 4 {
			return noIP
		}
		return ok()
	})
	if _, code := invoke(baseEnv, conf(nil, nil), later); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if want := backoffMs(0) + backoffMs(1) + backoffMs(2); later.clock != want {
		t.Fatalf("waited %d ms, want %d", later.clock, want)
	}
	never := always(noIP)
	out, code := invoke(baseEnv, conf(m{"addTimeoutSeconds": 5}, nil), never)
	errorOf(t, out, code, 11, `within 5 s.*none free`, "never")
	if never.clock > 5000 {
		t.Fatalf("waited %d ms past its 5 s", never.clock)
	}
	if backoffMs(0) != 100 || backoffMs(1) != 200 || backoffMs(4) != 1600 || backoffMs(5) != 2000 || backoffMs(80) != 2000 {
		t.Fatal("backoff: 100 ms doubling to 2 s")
	}
}

func TestAddARefusedTokenIs100ABadRequest101A5xx11(t *testing.T) {
	for _, c := range []struct{ status, code int }{{401, 100}, {403, 100}, {400, 101}, {404, 101}, {500, 11}, {429, 11}, {0, 11}} {
		api := always(answerOf(c.status, `{"response": {"ReturnCode": 23, "Message": "x"}}`))
		out, exit := invoke(baseEnv, conf(nil, nil), api)
		errorOf(t, out, exit, c.code, `^no address for default/web-1: `, "HTTP")
	}
	out, exit := invoke(baseEnv, conf(nil, nil), always(answerOf(400, `{"response": {"ReturnCode": 23, "Message": "bad"}}`)))
	errorOf(t, out, exit, 101, `answered HTTP 400, ReturnCode 23: bad$`, "400")
	out, exit = invoke(baseEnv, conf(nil, nil), always(apiAnswer{Status: 502}))
	errorOf(t, out, exit, 11, `the node API failed: HTTP 502$`, "502 without a body")
	out, exit = invoke(baseEnv, conf(nil, nil), always(apiAnswer{Status: 404}))
	errorOf(t, out, exit, 101, `ReturnCode none: HTTP 404$`, "404 without a body")
}

func TestDelNeedsNeitherNetnsNorArgsAndSucceedsWhenNothingIsHeld(t *testing.T) {
	api := always(answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 0, "Message": ""}}`))
	env := map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0"}
	out, code := invoke(env, conf(nil, nil), api)
	if out != nil || code != 0 {
		t.Fatalf("DEL: %v %d", out, code)
	}
	sameJSON(t, api.calls[0].Body, `{
		"podInterfaceID": "cni/net-a/c1/eth0",
		"infraContainerID": "c1",
		"orchestratorContext": {"PodName": "c1", "PodNamespace": "-"},
		"desiredIPAddresses": []
	}`)
	out, code = invoke(env, conf(nil, nil), always(answerOf(500, `{"response": {"ReturnCode": 99, "Message": "disk"}}`)))
	errorOf(t, out, code, 11, `^cannot release c1/eth0: the node API failed: disk$`, "DEL 500")
}

func TestCheck3ForAnUnknownAttachment102WhenTheRuntimeHasAnotherAddress(t *testing.T) {
	env := envWith(map[string]string{"CNI_COMMAND": "CHECK"})
	prev := func(address string) string {
		return conf(nil, m{"prevResult": m{"cniVersion": "1.0.0", "ips": []m{{"address": address}}}})
	}
	api := always(ok())
	if out, code := invoke(env, prev("10.10.0.7/16"), api); code != 0 || out != nil {
		t.Fatalf("CHECK: %v %d", plain(t, out), code)
	}
	if api.calls[0].Path != "/network/ipconfig" {
		t.Fatalf("CHECK asked %s", api.calls[0].Path)
	}
	sameJSON(t, api.calls[0].Body, `{"podInterfaceID": "cni/net-a/c1/eth0"}`)
	out, code := invoke(env, prev("10.10.0.8/16"), always(ok()))
	errorOf(t, out, code, 102, `holds 10\.10\.0\.7 for c1/eth0, the runtime's result has 10\.10\.0\.8$`, "mismatch")
	out, code = invoke(env, conf(nil, m{"prevResult": m{}}), always(ok()))
	errorOf(t, out, code, 102, `has no address$`, "empty prevResult")
	gone := always(answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 14, "Message": ""}}`))
	out, code = invoke(env, prev("10.10.0.7/16"), gone)
	errorOf(t, out, code, 3, `holds no address for c1/eth0 on network net-a`, "gone")
	// Without a prevResult, CHECK only asks that the sidecar holds one.
	if out, code := invoke(env, conf(nil, nil), always(ok())); code != 0 {
		t.Fatalf("CHECK without prevResult: %v", plain(t, out))
	}
}

func TestGcReleasesTheAttachmentsOfThisNetworkTheRuntimeNoLongerLists(t *testing.T) {
	attachment := func(c string) string {
		return `{"podInterfaceID": "cni/net-a/` + c + `/eth0", "infraContainerID": "` + c +
			`", "podName": "p-` + c + `", "podNamespace": "default", "IPAddress": "10.10.0.9"}`
	}
	api := fake(func(path string, _ interface{}) apiAnswer {
		if path == "/network/attachments" {
			return answerOf(200, `{"attachments": [`+attachment("c1")+`,`+attachment("c2")+
				`], "response": {"ReturnCode": 0, "Message": ""}}`)
		}
		return answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 0, "Message": ""}}`)
	})
	stdin := `{"cniVersion": "1.1.0", "name": "net-a", "type": "pool-monitor-cni", "nodeAPI": "http://127.0.0.1:1",
		"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}]}`
	if out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, api); code != 0 || out != nil {
		t.Fatalf("GC: %v %d", plain(t, out), code)
	}
	paths := []string{}
	for _, c := range api.calls {
		paths = append(paths, c.Path)
	}
	if strings.Join(paths, " ") != "/network/attachments /network/releaseipconfigs" {
		t.Fatalf("GC called %v", paths)
	}
	sameJSON(t, api.calls[0].Body, `{"podInterfaceIDPrefix": "cni/net-a/"}`)
	sameJSON(t, api.calls[1].Body, `{
		"podInterfaceID": "cni/net-a/c2/eth0",
		"infraContainerID": "c2",
		"orchestratorContext": {"PodName": "p-c2", "PodNamespace": "default"},
		"desiredIPAddresses": []
	}`)
	// A release that fails is named; the list failing is the node API's error.
	failing := fake(func(path string, _ interface{}) apiAnswer {
		if path == "/network/attachments" {
			return answerOf(200, `{"attachments": [`+attachment("c2")+`], "response": {"ReturnCode": 0}}`)
		}
		return apiAnswer{Status: 500}
	})
	out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, failing)
	errorOf(t, out, code, 11, `^GC could not release cni/net-a/c2/eth0 \(HTTP 500\)$`, "release fails")
	out, code = invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, always(apiAnswer{Status: 401}))
	errorOf(t, out, code, 100, `^cannot list the attachments: `, "list refused")
}

// A GC that lists no attachments (libcni's GCNetworkList with nil args sends
// no key; a nil slice in its args is sent as null) says nothing of what is
// still valid: it releases nothing, where reading it as an empty list freed
// every running pod's address (issue 53).
func TestGcWithoutAListReleasesNothing(t *testing.T) {
	listing := func() *fakeAPI {
		return fake(func(path string, _ interface{}) apiAnswer {
			if path == "/network/attachments" {
				return answerOf(200, `{"attachments": [{"podInterfaceID": "cni/net-a/c1/eth0", "infraContainerID": "c1"},
					{"podInterfaceID": "cni/net-a/c2/eth0", "infraContainerID": "c2"}], "response": {"ReturnCode": 0}}`)
			}
			return answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 0, "Message": ""}}`)
		})
	}
	base := `{"cniVersion": "1.1.0", "name": "net-a", "type": "pool-monitor-cni", "nodeAPI": "http://127.0.0.1:1"`
	for what, stdin := range map[string]string{
		"no key":                   base + `}`,
		"valid-attachments null":   base + `, "cni.dev/valid-attachments": null}`,
		"attachments null":         base + `, "cni.dev/attachments": null}`,
		"in an ipam section, none": conf(nil, m{"cniVersion": "1.1.0"}),
	} {
		api := listing()
		if out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, api); code != 0 || out != nil {
			t.Fatalf("%s: GC: %v %d", what, plain(t, out), code)
		}
		for _, c := range api.calls {
			if c.Path == "/network/releaseipconfigs" {
				t.Fatalf("%s: GC released %v", what, plain(t, c.Body))
			}
		}
	}
}

// The published 1.1.0 text names the list cni.dev/attachments (renamed
// cni.dev/valid-attachments by containernetworking/cni#1103, libcni sending
// both since): either is read, and an attachment either lists is kept.
func TestGcReadsTheListUnderEitherName(t *testing.T) {
	for what, lists := range map[string]string{
		"attachments": `"cni.dev/attachments": [{"containerID": "c1", "ifname": "eth0"}]`,
		"both, as libcni sends": `"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}],
			"cni.dev/attachments": [{"containerID": "c1", "ifname": "eth0"}]`,
		"one in each": `"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}],
			"cni.dev/attachments": [{"containerID": "c3", "ifname": "eth0"}]`,
	} {
		api := fake(func(path string, _ interface{}) apiAnswer {
			if path == "/network/attachments" {
				return answerOf(200, `{"attachments": [{"podInterfaceID": "cni/net-a/c1/eth0"},
					{"podInterfaceID": "cni/net-a/c2/eth0"}, {"podInterfaceID": "cni/net-a/c3/eth0"}], "response": {"ReturnCode": 0}}`)
			}
			return answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 0, "Message": ""}}`)
		})
		stdin := `{"cniVersion": "1.1.0", "name": "net-a", "type": "pool-monitor-cni", "nodeAPI": "http://127.0.0.1:1", ` + lists + `}`
		if out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, api); code != 0 || out != nil {
			t.Fatalf("%s: GC: %v %d", what, plain(t, out), code)
		}
		released := []string{}
		for _, c := range api.calls[1:] {
			id, _ := field(plain(t, c.Body), "podInterfaceID")
			released = append(released, text(id))
		}
		want := "cni/net-a/c2/eth0 cni/net-a/c3/eth0"
		if what == "one in each" {
			want = "cni/net-a/c2/eth0"
		}
		if strings.Join(released, " ") != want {
			t.Fatalf("%s: released %v, want %s", what, released, want)
		}
	}
	out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, conf(nil, m{"cni.dev/attachments": m{}}), always(ok()))
	errorOf(t, out, code, 7, `cni\.dev/attachments must be an array`, "a list that is not one")
}

// One release that fails does not stop the others; the failures are named at the end.
func TestGcKeepsGoingPastAFailedRelease(t *testing.T) {
	released := []string{}
	api := fake(func(path string, body interface{}) apiAnswer {
		if path == "/network/attachments" {
			return answerOf(200, `{"attachments": [{"podInterfaceID": "cni/net-a/c1/eth0"}, {"podInterfaceID": "cni/net-a/c2/eth0"},
				{"podInterfaceID": "cni/net-a/c3/eth0"}], "response": {"ReturnCode": 0}}`)
		}
		id, _ := field(plain(t, body), "podInterfaceID")
		released = append(released, text(id))
		switch id {
		case "cni/net-a/c1/eth0":
			return apiAnswer{Status: 500}
		case "cni/net-a/c2/eth0":
			return answerOf(200, `{"response": {"ReturnCode": 99, "Message": "store"}}`)
		}
		return answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 0, "Message": ""}}`)
	})
	stdin := `{"cniVersion": "1.1.0", "name": "net-a", "type": "pool-monitor-cni", "nodeAPI": "http://127.0.0.1:1",
		"cni.dev/valid-attachments": []}`
	out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, api)
	errorOf(t, out, code, 11,
		`^GC could not release cni/net-a/c1/eth0 \(HTTP 500\), cni/net-a/c2/eth0 \(HTTP 200, ReturnCode 99: store\)$`, "failures")
	if strings.Join(released, " ") != "cni/net-a/c1/eth0 cni/net-a/c2/eth0 cni/net-a/c3/eth0" {
		t.Fatalf("released %v", released)
	}
	// A release the sidecar does not answer (a restart) does not stop the rest either.
	released = released[:0]
	api.fail = func(path string, body interface{}) error {
		if id, _ := field(plain(t, body), "podInterfaceID"); id == "cni/net-a/c1/eth0" {
			return cniError(codeTryAgainLater, "cannot reach the node's pool-monitor sidecar")
		}
		return nil
	}
	out, code = invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, api)
	errorOf(t, out, code, 11, `^GC could not release cni/net-a/c1/eth0 \(cannot reach the node's pool-monitor sidecar\), cni/net-a/c2/eth0 `, "unreachable once")
	if strings.Join(released, " ") != "cni/net-a/c2/eth0 cni/net-a/c3/eth0" {
		t.Fatalf("released %v", released)
	}
}

func TestStatusFailsWith50UnlessTheSidecarIsReadyAndThePoolCanServe(t *testing.T) {
	stdin := conf(nil, m{"cniVersion": "1.1.0"})
	env := map[string]string{"CNI_COMMAND": "STATUS"}
	pool := func(exhausted bool, available int) apiAnswer {
		b := "false"
		if exhausted {
			b = "true"
		}
		return answerOf(200, `{"exhausted": `+b+`, "ipCounts": {"Available": `+strings.Repeat("1", available)+`0}}`)
	}
	ready := func(p apiAnswer) *fakeAPI {
		return fake(func(path string, _ interface{}) apiAnswer {
			if path == "/readyz" {
				return answerOf(200, `{}`)
			}
			return p
		})
	}
	if out, code := invoke(env, stdin, ready(pool(false, 0))); out != nil || code != 0 {
		t.Fatalf("STATUS ready: %v %d", plain(t, out), code)
	}
	if out, code := invoke(env, stdin, ready(pool(true, 1))); out != nil || code != 0 {
		t.Fatalf("STATUS exhausted but with addresses: %v %d", plain(t, out), code)
	}
	out, code := invoke(env, stdin, ready(pool(true, 0)))
	errorOf(t, out, code, 50, `no address is free on this node and the subnet is exhausted`, "dry")
	waiting := always(answerOf(503, `{"status": "not ready", "reason": "no NNC yet"}`))
	out, code = invoke(env, stdin, waiting)
	errorOf(t, out, code, 50, `^pool-monitor-cni cannot serve: the node's sidecar is not ready \(HTTP 503: no NNC yet\)$`, "not ready")
	out, code = invoke(env, stdin, always(apiAnswer{Status: 503}))
	errorOf(t, out, code, 50, `not ready \(HTTP 503\)$`, "not ready without a reason")
}

func TestVersionAnswersForAnyVersionAsked(t *testing.T) {
	out, code := invoke(map[string]string{"CNI_COMMAND": "VERSION"}, `{"cniVersion":"0.4.0"}`, nil)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	sameJSON(t, out, `{"cniVersion": "0.4.0", "supportedVersions": ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]}`)
	out, _ = invoke(map[string]string{"CNI_COMMAND": "VERSION"}, `{}`, nil)
	sameJSON(t, out, `{"cniVersion": "1.1.0", "supportedVersions": ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]}`)
}

func TestErrorsCarryTheConfigurationsVersion(t *testing.T) {
	out, _ := invoke(envWith(map[string]string{"CNI_ARGS": ""}), conf(nil, m{"cniVersion": "0.4.0"}), always(ok()))
	sameJSON(t, out, `{"cniVersion": "0.4.0", "code": 4, "msg": "CNI_ARGS must carry K8S_POD_NAMESPACE and K8S_POD_NAME: the sidecar hands addresses to pods of its node and reclaims one whose pod it cannot find"}`)
}
