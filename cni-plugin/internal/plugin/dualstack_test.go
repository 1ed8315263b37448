// Dual-stack and IPv6-only through whole invocations over HTTP: a fake node
// API (httptest) that answers as DESIGN "Address families" says the sidecar
// does, one podIPInfo entry per family, IPv4 first, and lists one
// attachment entry per address. ADD gives both families, CHECK compares
// the whole set, DEL and GC release the attachment once.
package plugin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// familyAPI is a node API holding, per interface id, one address of each
// family it serves; releases records every release asked.
type familyAPI struct {
	mu       sync.Mutex
	families []int
	held     map[string]int
	next     int
	releases []string
}

func (f *familyAPI) infos(n int) []m {
	out := []m{}
	for _, family := range f.families {
		if family == 4 {
			out = append(out, infoOf("10.10.0."+strconv.Itoa(n), 16, "10.10.0.1"))
		} else {
			out = append(out, infoOf("fd00:10::"+strconv.Itoa(n), 64, "fd00:10::1"))
		}
	}
	return out
}

func (f *familyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, _ := io.ReadAll(r.Body)
	var body struct {
		PodInterfaceID       string `json:"podInterfaceID"`
		PodInterfaceIDPrefix string `json:"podInterfaceIDPrefix"`
	}
	_ = json.Unmarshal(data, &body)
	ok := m{"ReturnCode": 0, "Message": ""}
	var answer m
	switch r.URL.Path {
	case "/network/requestipconfigs":
		n, held := f.held[body.PodInterfaceID]
		if !held {
			f.next++
			n = f.next
			f.held[body.PodInterfaceID] = n
		}
		answer = m{"podIPInfo": f.infos(n), "response": ok}
	case "/network/ipconfig":
		n, held := f.held[body.PodInterfaceID]
		if !held {
			answer = m{"podIPInfo": []m{}, "response": m{"ReturnCode": 14, "Message": "none"}}
		} else {
			answer = m{"podIPInfo": f.infos(n), "response": ok}
		}
	case "/network/releaseipconfigs":
		f.releases = append(f.releases, body.PodInterfaceID)
		delete(f.held, body.PodInterfaceID)
		answer = m{"podIPInfo": []m{}, "response": ok}
	case "/network/attachments":
		list := []m{}
		for id, n := range f.held {
			if strings.HasPrefix(id, body.PodInterfaceIDPrefix) {
				for _, info := range f.infos(n) {
					list = append(list, m{"podInterfaceID": id, "IPAddress": info["PodIPConfig"].(m)["IPAddress"]})
				}
			}
		}
		answer = m{"attachments": list, "response": ok}
	default:
		w.WriteHeader(404)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// overHTTP runs one invocation with the real client against the server.
func overHTTP(t *testing.T, url string, env map[string]string, ipam m, top m) (interface{}, int) {
	t.Helper()
	section := m{"nodeAPI": url}
	for k, v := range ipam {
		section[k] = v
	}
	stdin := conf(section, top)
	return run(func(k string) string { return env[k] }, func() ([]byte, error) { return []byte(stdin), nil }, runDeps{})
}

func serveFamilies(t *testing.T, families ...int) (*familyAPI, string) {
	api := &familyAPI{families: families, held: map[string]int{}}
	s := httptest.NewServer(api)
	t.Cleanup(s.Close)
	return api, s.URL
}

func TestDualStackAddCheckDelAndGcOverHTTP(t *testing.T) {
	api, url := serveFamilies(t, 4, 6)
	out, code := overHTTP(t, url, baseEnv, nil, nil)
	if code != 0 {
		t.Fatalf("ADD: %v", plain(t, out))
	}
	sameJSON(t, out, `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "10.10.0.1/16", "gateway": "10.10.0.1"}, {"address": "fd00:10::1/64", "gateway": "fd00:10::1"}],
		"routes": [{"dst": "0.0.0.0/0", "gw": "10.10.0.1"}, {"dst": "::/0", "gw": "fd00:10::1"}],
		"dns": {}
	}`, "ADD")
	checkEnv := envWith(map[string]string{"CNI_COMMAND": "CHECK"})
	if got, code := overHTTP(t, url, checkEnv, nil, m{"prevResult": plain(t, out)}); code != 0 {
		t.Fatalf("CHECK with the ADD's result: %v", plain(t, got))
	}
	// The whole set: one family missing, or another address of a held subnet, is a mismatch.
	for what, ips := range map[string][]m{
		"IPv6 missing":        {{"address": "10.10.0.1/16"}},
		"IPv4 missing":        {{"address": "fd00:10::1/64"}},
		"another IPv6":        {{"address": "10.10.0.1/16"}, {"address": "fd00:10::9/64"}},
		"an extra IPv6":       {{"address": "10.10.0.1/16"}, {"address": "fd00:10::1/64"}, {"address": "fd00:10::9/64"}},
		"the other IPv4 only": {{"address": "10.10.0.9/16"}, {"address": "fd00:10::1/64"}},
	} {
		got, code := overHTTP(t, url, checkEnv, nil, m{"prevResult": m{"cniVersion": "1.0.0", "ips": ips}})
		errorOf(t, got, code, 102, `^the sidecar holds 10\.10\.0\.1, fd00:10::1 for c1/eth0, the runtime's result has `, what)
	}
	// An address of another subnet is another plugin's.
	other := []m{{"address": "10.10.0.1/16"}, {"address": "fd00:10::1/64"}, {"address": "192.168.5.5/24"}}
	if got, code := overHTTP(t, url, checkEnv, nil, m{"prevResult": m{"cniVersion": "1.0.0", "ips": other}}); code != 0 {
		t.Fatalf("CHECK with another plugin's address: %v", plain(t, got))
	}
	// GC: the stale attachment is listed once per address, released once.
	second := envWith(map[string]string{"CNI_CONTAINERID": "c2"})
	if got, code := overHTTP(t, url, second, nil, nil); code != 0 {
		t.Fatalf("ADD c2: %v", plain(t, got))
	}
	gcEnv := map[string]string{"CNI_COMMAND": "GC"}
	valid := []m{{"containerID": "c1", "ifname": "eth0"}}
	if got, code := overHTTP(t, url, gcEnv, nil, m{"cniVersion": "1.1.0", "cni.dev/valid-attachments": valid}); code != 0 || got != nil {
		t.Fatalf("GC: %v", plain(t, got))
	}
	if strings.Join(api.releases, " ") != "cni/net-a/c2/eth0" {
		t.Fatalf("GC released %v", api.releases)
	}
	// DEL: one release frees both families.
	delEnv := envWith(map[string]string{"CNI_COMMAND": "DEL"})
	if got, code := overHTTP(t, url, delEnv, nil, nil); code != 0 || got != nil {
		t.Fatalf("DEL: %v", plain(t, got))
	}
	if strings.Join(api.releases, " ") != "cni/net-a/c2/eth0 cni/net-a/c1/eth0" || len(api.held) != 0 {
		t.Fatalf("released %v, held %v", api.releases, api.held)
	}
	got, code := overHTTP(t, url, checkEnv, nil, m{"prevResult": plain(t, out)})
	errorOf(t, got, code, 3, `holds no address for c1/eth0`, "CHECK after DEL")
}

func TestIPv6OnlyAddAndCheckOverHTTP(t *testing.T) {
	_, url := serveFamilies(t, 6)
	out, code := overHTTP(t, url, baseEnv, nil, m{"cniVersion": "0.4.0"})
	if code != 0 {
		t.Fatalf("ADD: %v", plain(t, out))
	}
	sameJSON(t, out, `{
		"cniVersion": "0.4.0",
		"ips": [{"address": "fd00:10::1/64", "gateway": "fd00:10::1", "version": "6"}],
		"routes": [{"dst": "::/0", "gw": "fd00:10::1"}],
		"dns": {}
	}`, "ADD")
	checkEnv := envWith(map[string]string{"CNI_COMMAND": "CHECK"})
	if got, code := overHTTP(t, url, checkEnv, nil, m{"cniVersion": "0.4.0", "prevResult": plain(t, out)}); code != 0 {
		t.Fatalf("CHECK: %v", plain(t, got))
	}
	got, code := overHTTP(t, url, checkEnv, nil, m{"prevResult": m{"ips": []m{{"address": "fd00:10::2/64"}}}})
	errorOf(t, got, code, 102, `^the sidecar holds fd00:10::1 for c1/eth0, the runtime's result has fd00:10::2$`, "mismatch")
}
