// The configuration's and the invocation's checks: the spec's codes, the
// key named; CNI_ARGS, node API addresses and the attachment id; GC and
// STATUS keys from the top level.
package plugin

import (
	"reflect"
	"strings"
	"testing"
)

func TestBadConfigurationNamesTheKeyWithTheSpecCode(t *testing.T) {
	cases := []struct {
		stdin string
		env   map[string]string
		code  int
		msg   string
	}{
		{"{", baseEnv, 6, `not JSON`},
		{conf(nil, m{"cniVersion": "9.9.9"}), baseEnv, 1, `incompatible CNI version 9\.9\.9`},
		{conf(m{"nodeAPI": "https://x"}, nil), baseEnv, 7, `ipam\.nodeAPI`},
		{conf(m{"type": "host-local"}, nil), baseEnv, 7, `ipam\.type`},
		{conf(m{"routes": []m{{"dst": "10.0.0.0"}}}, nil), baseEnv, 7, `ipam\.routes\[0\]\.dst`},
		{conf(m{"dns": m{"nameservers": []string{"x"}}}, nil), baseEnv, 7, `ipam\.dns\.nameservers\[0\]`},
		{conf(m{"mtu": 0}, nil), baseEnv, 7, `ipam\.mtu`},
		{conf(m{"tokenFile": "rel"}, nil), baseEnv, 7, `ipam\.tokenFile`},
		{conf(nil, nil), envWith(map[string]string{"CNI_COMMAND": "FROB"}), 4, `CNI_COMMAND`},
		{conf(nil, nil), envWith(map[string]string{"CNI_NETNS": ""}), 4, `CNI_NETNS`},
		{conf(nil, nil), envWith(map[string]string{"CNI_ARGS": ""}), 4, `K8S_POD_NAME`},
	}
	for _, c := range cases {
		out, exit := invoke(c.env, c.stdin, always(ok()))
		errorOf(t, out, exit, c.code, c.msg, c.stdin)
	}
}

// More of the same, each key the configuration documents.
func TestEveryCheckedKeyIsNamed(t *testing.T) {
	cases := []struct {
		stdin string
		code  int
		msg   string
	}{
		{`[1]`, 6, `must be a JSON object`},
		{`{"name":"net-a"}`, 7, `cniVersion is required`},
		{conf(nil, m{"name": "bad name"}), 7, `^invalid network configuration: name must be a network name`},
		{conf(nil, m{"name": strings.Repeat("n", 129)}), 7, `name must be a network name`},
		{conf(nil, m{"ipam": "x"}), 7, `ipam must be an object`},
		{conf(nil, m{"ipam": m{"nodeAPI": "unix:/s"}}), 7, `ipam\.type must be "pool-monitor-cni", got undefined`},
		{conf(m{"nodeAPI": ""}, nil), 7, `ipam\.nodeAPI must be a non-empty string`},
		{conf(m{"nodeAPI": "unix:rel.sock"}, nil), 7, `ipam\.nodeAPI must name an absolute socket path`},
		{conf(m{"nodeAPI": "http://h:1/p"}, nil), 7, `ipam\.nodeAPI must be unix:/path or http://host:port, got "http://h:1/p"`},
		{conf(m{"nodeAPI": "http://h:1/?q"}, nil), 7, `ipam\.nodeAPI`},
		{conf(m{"nodeAPI": "http://h:99999"}, nil), 7, `ipam\.nodeAPI`},
		{conf(m{"gateway": "10.0.0.256"}, nil), 7, `ipam\.gateway is not an IP address: 10\.0\.0\.256`},
		{conf(m{"routes": m{}}, nil), 7, `ipam\.routes must be an array`},
		{conf(m{"routes": []interface{}{"x"}}, nil), 7, `ipam\.routes\[0\] must be an object`},
		{conf(m{"routes": []m{{}}}, nil), 7, `ipam\.routes\[0\]\.dst must be a CIDR, got undefined`},
		{conf(m{"routes": []m{{"dst": "10.0.0.0/33"}}}, nil), 7, `ipam\.routes\[0\]\.dst`},
		{conf(m{"routes": []m{{"dst": "::/129"}}}, nil), 7, `ipam\.routes\[0\]\.dst`},
		{conf(m{"routes": []m{{"dst": "10.0.0.0/8", "gw": "g"}}}, nil), 7, `ipam\.routes\[0\]\.gw`},
		{conf(m{"dns": []string{}}, nil), 7, `ipam\.dns must be an object`},
		{conf(m{"dns": m{"search": "x"}}, nil), 7, `ipam\.dns\.search must be an array of strings`},
		{conf(m{"dns": m{"options": []int{1}}}, nil), 7, `ipam\.dns\.options`},
		{conf(m{"dns": m{"domain": 1}}, nil), 7, `ipam\.dns\.domain`},
		{conf(m{"mtu": 1.5}, nil), 7, `ipam\.mtu must be a whole number from 1 to 65535`},
		{conf(m{"mtu": 65536}, nil), 7, `ipam\.mtu`},
		{conf(m{"mtu": nil}, nil), 7, `ipam\.mtu`},
		{conf(m{"addTimeoutSeconds": 3601}, nil), 7, `ipam\.addTimeoutSeconds must be a whole number from 1 to 3600`},
		{conf(nil, m{"cni.dev/valid-attachments": m{}}), 7, `cni\.dev/valid-attachments must be an array`},
		{conf(nil, m{"cni.dev/valid-attachments": []m{{"containerID": "c"}}}), 7, `cni\.dev/valid-attachments\[0\] needs containerID and ifname`},
		{conf(nil, m{"cni.dev/valid-attachments": []int{1}}), 7, `cni\.dev/valid-attachments\[0\] must be an object`},
		{conf(nil, m{"cniVersion": 1}), 7, `cniVersion is required`},
	}
	for _, c := range cases {
		out, exit := invoke(baseEnv, c.stdin, always(ok()))
		errorOf(t, out, exit, c.code, c.msg, c.stdin)
	}
}

func TestEveryCheckedVariableIsNamed(t *testing.T) {
	cases := []struct {
		env  map[string]string
		code int
		msg  string
	}{
		{envWith(map[string]string{"CNI_COMMAND": ""}), 4, `^CNI_COMMAND is not set \(one of ADD, DEL, CHECK, VERSION, GC, STATUS\)$`},
		{envWith(map[string]string{"CNI_COMMAND": "FROB"}), 4, `^CNI_COMMAND "FROB" is not one of`},
		{envWith(map[string]string{"CNI_CONTAINERID": ""}), 4, `^CNI_CONTAINERID is required for ADD$`},
		{envWith(map[string]string{"CNI_IFNAME": ""}), 4, `^CNI_IFNAME is required for ADD$`},
		{envWith(map[string]string{"CNI_COMMAND": "CHECK", "CNI_NETNS": ""}), 4, `^CNI_NETNS is required for CHECK$`},
		{envWith(map[string]string{"CNI_CONTAINERID": "a/b"}), 4, `CNI_CONTAINERID may hold only`},
		{envWith(map[string]string{"CNI_CONTAINERID": "ab\n"}), 4, `CNI_CONTAINERID may hold only`},
		{envWith(map[string]string{"CNI_CONTAINERID": strings.Repeat("c", 260)}), 4, `256`},
	}
	for _, c := range cases {
		out, exit := invoke(c.env, conf(nil, nil), always(ok()))
		errorOf(t, out, exit, c.code, c.msg, c.env["CNI_COMMAND"])
	}
}

func TestParsesCniArgsNodeAPIAddressesAndTheAttachmentID(t *testing.T) {
	if got := parseCniArgs("IgnoreUnknown=1;K8S_POD_NAME=a=b;junk"); !reflect.DeepEqual(got,
		map[string]string{"IgnoreUnknown": "1", "K8S_POD_NAME": "a=b"}) {
		t.Fatalf("CNI_ARGS: %v", got)
	}
	for text, want := range map[string]nodeAPIAddress{
		"unix:/run/x.sock":       {Kind: "unix", Path: "/run/x.sock"},
		"http://127.0.0.1:10092": {Kind: "http", Host: "127.0.0.1", Port: 10092},
		"http://[::1]:10092/":    {Kind: "http", Host: "::1", Port: 10092},
		"http://localhost":       {Kind: "http", Host: "localhost", Port: 80},
	} {
		got, err := parseNodeAPI(text, "ipam.nodeAPI")
		if err != nil || got != want {
			t.Fatalf("%s: %+v %v", text, got, err)
		}
	}
	if id, err := interfaceID("net-a", "c1", "eth0"); err != nil || id != "cni/net-a/c1/eth0" {
		t.Fatalf("id %q %v", id, err)
	}
	if _, err := interfaceID("n", strings.Repeat("c", 260), "eth0"); err == nil || !strings.Contains(err.Error(), "256") {
		t.Fatalf("a long id: %v", err)
	}
}

func TestReadsGcAndStatusKeysFromTheTopLevelWithoutAnIpamSection(t *testing.T) {
	raw, err := parseJSON([]byte(`{"cniVersion":"1.1.0","name":"net-a","type":"pool-monitor-cni",
		"nodeAPI":"unix:/s.sock","tokenFile":"/t",
		"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"eth0"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeAPI != (nodeAPIAddress{Kind: "unix", Path: "/s.sock"}) {
		t.Fatalf("nodeAPI %+v", c.NodeAPI)
	}
	if c.TokenFile != (tokenFile{Path: "/t", Required: true}) {
		t.Fatalf("tokenFile %+v", c.TokenFile)
	}
	if !reflect.DeepEqual(c.ValidAttachments, []gcAttachment{{ContainerID: "c1", IfName: "eth0"}}) {
		t.Fatalf("valid attachments %+v", c.ValidAttachments)
	}
}

func TestDefaults(t *testing.T) {
	raw, _ := parseJSON([]byte(`{"cniVersion":"1.0.0","name":"n","ipam":{"type":"pool-monitor-cni"}}`))
	c, err := parseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeAPIText != defaultNodeAPI || c.TokenFile != (tokenFile{Path: defaultTokenFile}) ||
		c.AddTimeoutSeconds != 60 || c.Routes != nil || c.DNS != nil || c.HasPrevResult {
		t.Fatalf("defaults: %+v", c)
	}
}
