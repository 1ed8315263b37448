// GC and STATUS as a runtime sends them: libcni (containernetworking/cni,
// libcni/api.go, GCNetworkList and GetStatusNetworkList) runs each plugin
// of a 1.1.0 list with that plugin's own entry, into which InjectConf
// (libcni/conf.go) merges the list's `name` and `cniVersion` and, for GC
// with args, the still-valid attachments under both
// `cni.dev/valid-attachments` and `cni.dev/attachments` (since
// containernetworking/cni#1103; a nil slice is sent as null). A main
// plugin passes its stdin through to its IPAM unchanged
// (containernetworking/plugins, pkg/ipam ExecStatus), so that is what this
// plugin reads. The entries are the repository's example conflists.
package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

var exampleConflists = []string{"bridge.conflist", "ptp.conflist"}

// libcniConf is what libcni gives the plugin of a conflist whose ipam is
// this plugin: its entry with the list's name and version and inject merged.
func libcniConf(t *testing.T, conflist string, inject m) (string, m) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", "examples", "cni", conflist))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		CniVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []m    `json:"plugins"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", conflist, err)
	}
	var entry m
	for _, p := range list.Plugins {
		if ipam, _ := p["ipam"].(map[string]interface{}); ipam != nil && ipam["type"] == pluginType {
			entry = p
		}
	}
	if entry == nil {
		t.Fatalf("%s: no plugin with ipam type %s", conflist, pluginType)
	}
	entry["name"], entry["cniVersion"] = list.Name, list.CniVersion
	for k, v := range inject {
		entry[k] = v
	}
	out, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), m{"name": list.Name, "cniVersion": list.CniVersion}
}

// libcni sends GC and STATUS only to lists of version 1.1.0 or later.
func TestTheExampleConflistsAre110SoThatGcAndStatusReachThePlugin(t *testing.T) {
	for _, f := range exampleConflists {
		if _, list := libcniConf(t, f, nil); list["cniVersion"] != "1.1.0" {
			t.Fatalf("%s: cniVersion %v: libcni sends no GC or STATUS below 1.1.0", f, list["cniVersion"])
		}
	}
}

func TestGcAsLibcniSendsItForEachExample(t *testing.T) {
	for _, f := range exampleConflists {
		_, list := libcniConf(t, f, nil)
		prefix := "cni/" + text(list["name"]) + "/"
		listing := func() *fakeAPI {
			return fake(func(path string, body interface{}) apiAnswer {
				if path == "/network/attachments" {
					return answerOf(200, `{"attachments": [{"podInterfaceID": "`+prefix+`c1/eth0"},
						{"podInterfaceID": "`+prefix+`c2/eth0"}], "response": {"ReturnCode": 0}}`)
				}
				return answerOf(200, `{"podIPInfo": [], "response": {"ReturnCode": 0, "Message": ""}}`)
			})
		}
		valid := []m{{"containerID": "c1", "ifname": "eth0"}}
		withArgs, _ := libcniConf(t, f, m{"cni.dev/valid-attachments": valid, "cni.dev/attachments": valid})
		api := listing()
		if out, code := invoke(map[string]string{"CNI_COMMAND": "GC", "CNI_PATH": "/opt/cni/bin"}, withArgs, api); code != 0 || out != nil {
			t.Fatalf("%s: GC: %v %d", f, plain(t, out), code)
		}
		sameJSON(t, api.calls[0].Body, `{"podInterfaceIDPrefix": "`+prefix+`"}`, f)
		if len(api.calls) != 2 || api.calls[1].Path != "/network/releaseipconfigs" {
			t.Fatalf("%s: GC called %+v", f, api.calls)
		}
		if id, _ := field(plain(t, api.calls[1].Body), "podInterfaceID"); id != prefix+"c2/eth0" {
			t.Fatalf("%s: GC released %v", f, id)
		}
		// GCNetworkList(ctx, list, nil) and GCArgs{} with a nil slice: no list.
		for what, inject := range map[string]m{"nil args": nil, "nil slice": {
			"cni.dev/valid-attachments": nil, "cni.dev/attachments": nil}} {
			stdin, _ := libcniConf(t, f, inject)
			api := listing()
			if out, code := invoke(map[string]string{"CNI_COMMAND": "GC"}, stdin, api); code != 0 || out != nil {
				t.Fatalf("%s, %s: GC: %v %d", f, what, plain(t, out), code)
			}
			if len(api.calls) != 0 {
				t.Fatalf("%s, %s: GC called %+v", f, what, api.calls)
			}
		}
	}
}

func TestStatusAsLibcniSendsItForEachExample(t *testing.T) {
	for _, f := range exampleConflists {
		stdin, _ := libcniConf(t, f, nil)
		ready := fake(func(path string, _ interface{}) apiAnswer {
			if path == "/readyz" {
				return answerOf(200, `{}`)
			}
			return answerOf(200, `{"exhausted": false, "ipCounts": {"Available": 3}}`)
		})
		if out, code := invoke(map[string]string{"CNI_COMMAND": "STATUS"}, stdin, ready); code != 0 || out != nil {
			t.Fatalf("%s: STATUS: %v %d", f, plain(t, out), code)
		}
		out, code := invoke(map[string]string{"CNI_COMMAND": "STATUS"}, stdin, always(answerOf(503, `{"reason": "no NNC yet"}`)))
		errorOf(t, out, code, 50, `not ready \(HTTP 503: no NNC yet\)$`, f)
		if v, _ := field(plain(t, out), "cniVersion"); v != "1.1.0" {
			t.Fatalf("%s: the error's version: %v", f, v)
		}
	}
}
