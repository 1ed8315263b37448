// What the tests share: the node API's answer for 10.10.0.7/16, a
// configuration builder, the runtime's environment, and a fake node API
// that answers from a script, records the calls and keeps a fake clock.
package plugin

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
)

var info = map[string]interface{}{
	"PodIPConfig": map[string]interface{}{"IPAddress": "10.10.0.7", "PrefixLength": 16.0},
	"NetworkContainerPrimaryIPConfig": map[string]interface{}{
		"IPSubnet":         map[string]interface{}{"IPAddress": "10.10.200.1", "PrefixLength": 16.0},
		"DNSServers":       []interface{}{},
		"GatewayIPAddress": "10.10.0.1",
	},
}

func ok() apiAnswer {
	return apiAnswer{Status: 200, Body: map[string]interface{}{
		"podIPInfo": []interface{}{info},
		"response":  map[string]interface{}{"ReturnCode": 0.0, "Message": ""},
	}}
}

// answerOf is an answer with a JSON body.
func answerOf(status int, body string) apiAnswer {
	v, err := decode([]byte(body))
	if err != nil {
		panic(err)
	}
	return apiAnswer{Status: status, Body: v}
}

type m = map[string]interface{}

// conf is a network configuration with pool-monitor-cni as its IPAM, the
// ipam keys and top-level keys given added.
func conf(ipam m, top m) string {
	section := m{"type": "pool-monitor-cni", "nodeAPI": "http://127.0.0.1:1"}
	for k, v := range ipam {
		section[k] = v
	}
	c := m{"cniVersion": "1.0.0", "name": "net-a", "type": "bridge", "ipam": section}
	for k, v := range top {
		c[k] = v
	}
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(data)
}

var baseEnv = map[string]string{
	"CNI_COMMAND":     "ADD",
	"CNI_CONTAINERID": "c1",
	"CNI_IFNAME":      "eth0",
	"CNI_NETNS":       "/var/run/netns/x",
	"CNI_ARGS":        "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1",
}

// envWith is baseEnv with some variables changed ("" unsets one).
func envWith(changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range baseEnv {
		out[k] = v
	}
	for k, v := range changes {
		out[k] = v
	}
	return out
}

type seenCall struct {
	Method string
	Path   string
	Body   interface{}
}

type fakeAPI struct {
	answer func(path string, body interface{}) apiAnswer
	// fail, when set, is the error of a call the sidecar does not answer (nil: it answers).
	fail  func(path string, body interface{}) error
	calls []seenCall
	clock int64
}

func (f *fakeAPI) call(method, path string, body interface{}) (apiAnswer, error) {
	f.calls = append(f.calls, seenCall{method, path, body})
	if f.fail != nil {
		if err := f.fail(path, body); err != nil {
			return apiAnswer{}, err
		}
	}
	return f.answer(path, body), nil
}

func (f *fakeAPI) deps() runDeps {
	return runDeps{
		Client: f,
		Now:    func() int64 { return f.clock },
		Sleep:  func(ms int64) { f.clock += ms },
	}
}

func fake(answer func(path string, body interface{}) apiAnswer) *fakeAPI {
	return &fakeAPI{answer: answer}
}

func always(a apiAnswer) *fakeAPI {
	return fake(func(string, interface{}) apiAnswer { return a })
}

// invoke is one invocation with this environment, stdin and node API.
func invoke(env map[string]string, stdin string, api *fakeAPI) (interface{}, int) {
	deps := runDeps{}
	if api != nil {
		deps = api.deps()
	}
	return run(func(k string) string { return env[k] }, func() ([]byte, error) { return []byte(stdin), nil }, deps)
}

// plain is v as untyped JSON (what a reader of the output sees).
func plain(t *testing.T, v interface{}) interface{} {
	t.Helper()
	data, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameJSON fails unless got, written as JSON, equals the JSON text want.
func sameJSON(t *testing.T, got interface{}, want string, what ...interface{}) {
	t.Helper()
	w, err := decode([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if g := plain(t, got); !reflect.DeepEqual(g, w) {
		gt, _ := marshal(got)
		t.Fatalf("%v: got %s, want %s", what, gt, want)
	}
}

// errorOf checks an error output: exit 1, the code, a message matching msg.
func errorOf(t *testing.T, out interface{}, exit int, code int, msg string, what string) {
	t.Helper()
	if exit != 1 {
		t.Fatalf("%s: exit %d, want 1", what, exit)
	}
	o := plain(t, out)
	if c, _ := field(o, "code"); !isNumber(c, float64(code)) {
		t.Fatalf("%s: code %v, want %d (%v)", what, c, code, o)
	}
	text, _ := field(o, "msg")
	if !regexp.MustCompile(msg).MatchString(text.(string)) {
		t.Fatalf("%s: msg %q does not match %s", what, text, msg)
	}
}

// first is the first element of an array, or nil.
func first(v interface{}) interface{} {
	a, ok := v.([]interface{})
	if !ok || len(a) == 0 {
		return nil
	}
	return a[0]
}
