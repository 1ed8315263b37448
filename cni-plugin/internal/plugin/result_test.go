// The result per version: the address with the subnet prefix, the gateway
// and a default route through it; configured routes, gateway and MTU (on
// 1.1.0); `version` in 0.x results; one address per family, each with its
// own gateway and default route.
package plugin

import "testing"

func parsed(t *testing.T, stdin string) *ipamConfig {
	t.Helper()
	raw, err := parseJSON([]byte(stdin))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// build is the result for these podIPInfo entries.
func build(t *testing.T, c *ipamConfig, infos ...interface{}) object {
	t.Helper()
	r, err := buildResult(c, infos)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResultGivesTheAddressWithThePrefixTheGatewayAndADefaultRoute(t *testing.T) {
	c := parsed(t, conf(m{"dns": m{"nameservers": []string{"10.0.0.10"}}}, nil))
	sameJSON(t, build(t, c, info), `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "10.10.0.7/16", "gateway": "10.10.0.1"}],
		"routes": [{"dst": "0.0.0.0/0", "gw": "10.10.0.1"}],
		"dns": {"nameservers": ["10.0.0.10"]}
	}`)
}

func TestResultFollowsConfiguredRoutesGatewayMtuAndTheVersion(t *testing.T) {
	none := build(t, parsed(t, conf(m{"routes": []m{}}, nil)), info)
	routes, _ := none.get("routes")
	sameJSON(t, routes, `[]`, "no routes")
	own := build(t, parsed(t, conf(m{"gateway": "10.10.0.254", "routes": []m{{"dst": "10.96.0.0/12"}}, "mtu": 1400},
		m{"cniVersion": "1.1.0"})), info)
	sameJSON(t, own, `{
		"cniVersion": "1.1.0",
		"ips": [{"address": "10.10.0.7/16", "gateway": "10.10.0.254"}],
		"routes": [{"dst": "10.96.0.0/12", "gw": "10.10.0.254", "mtu": 1400}],
		"dns": {}
	}`, "own routes")
	// No mtu before 1.1.0.
	noMtu := build(t, parsed(t, conf(m{"routes": []m{{"dst": "10.96.0.0/12"}}, "mtu": 1400}, nil)), info)
	routes, _ = noMtu.get("routes")
	sameJSON(t, routes, `[{"dst": "10.96.0.0/12", "gw": "10.10.0.1"}]`, "1.0.0 routes")
	for _, v := range []string{"0.3.0", "0.3.1", "0.4.0"} {
		old := build(t, parsed(t, conf(nil, m{"cniVersion": v})), info)
		ips, _ := old.get("ips")
		sameJSON(t, ips, `[{"address": "10.10.0.7/16", "gateway": "10.10.0.1", "version": "4"}]`, v)
	}
}

func TestResultRoutesOfTheAddressFamilyOnlyAndTheirOwnGateways(t *testing.T) {
	c := parsed(t, conf(m{
		"routes": []m{{"dst": "10.96.0.0/12", "gw": "10.10.0.9"}, {"dst": "fd00::/8"}},
		"dns":    m{"nameservers": []string{}, "domain": "cluster.local", "search": []string{"a"}, "options": []string{"ndots:5"}},
	}, nil))
	sameJSON(t, build(t, c, info), `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "10.10.0.7/16", "gateway": "10.10.0.1"}],
		"routes": [{"dst": "10.96.0.0/12", "gw": "10.10.0.9"}],
		"dns": {"nameservers": [], "domain": "cluster.local", "search": ["a"], "options": ["ndots:5"]}
	}`)
	v6 := m{
		"PodIPConfig":                     m{"IPAddress": "fd00::7", "PrefixLength": 64.0},
		"NetworkContainerPrimaryIPConfig": m{"GatewayIPAddress": "10.10.0.1"},
	}
	// The NNC's gateway is of the other family: none, and no default route.
	sameJSON(t, build(t, parsed(t, conf(nil, m{"cniVersion": "0.4.0"})), v6), `{
		"cniVersion": "0.4.0",
		"ips": [{"address": "fd00::7/64", "version": "6"}],
		"routes": [],
		"dns": {}
	}`)
	if _, err := buildResult(parsed(t, conf(nil, nil)), []interface{}{m{"PodIPConfig": m{"IPAddress": "x"}}}); err == nil ||
		err.(*errorResult).Code != codeNodeAPIError {
		t.Fatalf("no address: %v", err)
	}
}

func TestAddressesOfAPrevResult(t *testing.T) {
	v, _ := decode([]byte(`{"ips":[{"address":"10.0.0.1/24"},{"address":5},{},{"address":"fd00::1/64"}]}`))
	sameJSON(t, addressesOf(v), `["10.0.0.1","fd00::1"]`)
	sameJSON(t, addressesOf(nil), `[]`)
}

// The node API's entry for an address of either family, its prefix and gateway.
func infoOf(address string, prefix float64, gateway string) m {
	return m{
		"PodIPConfig": m{"IPAddress": address, "PrefixLength": prefix},
		"NetworkContainerPrimaryIPConfig": m{
			"IPSubnet":         m{"IPAddress": address, "PrefixLength": prefix},
			"GatewayIPAddress": gateway,
		},
	}
}

var (
	v4 = infoOf("10.10.0.7", 16, "10.10.0.1")
	v6 = infoOf("fd00:10::7", 64, "fd00:10::1")
)

func TestResultOfADualStackAnswerHasEachFamilyWithItsOwnGatewayAndDefaultRoute(t *testing.T) {
	want := `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "10.10.0.7/16", "gateway": "10.10.0.1"}, {"address": "fd00:10::7/64", "gateway": "fd00:10::1"}],
		"routes": [{"dst": "0.0.0.0/0", "gw": "10.10.0.1"}, {"dst": "::/0", "gw": "fd00:10::1"}],
		"dns": {}
	}`
	sameJSON(t, build(t, parsed(t, conf(nil, nil)), v4, v6), want, "IPv4 first")
	// Whatever order the answer has, IPv4 comes first.
	sameJSON(t, build(t, parsed(t, conf(nil, nil)), v6, v4), want, "IPv6 first in the answer")
	for _, v := range []string{"0.3.1", "0.4.0"} {
		ips, _ := build(t, parsed(t, conf(nil, m{"cniVersion": v})), v4, v6).get("ips")
		sameJSON(t, ips, `[{"address": "10.10.0.7/16", "gateway": "10.10.0.1", "version": "4"},
			{"address": "fd00:10::7/64", "gateway": "fd00:10::1", "version": "6"}]`, v)
	}
}

func TestResultOfAnIPv6OnlyAnswer(t *testing.T) {
	sameJSON(t, build(t, parsed(t, conf(nil, nil)), v6), `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "fd00:10::7/64", "gateway": "fd00:10::1"}],
		"routes": [{"dst": "::/0", "gw": "fd00:10::1"}],
		"dns": {}
	}`)
	// An IPv4 gateway in the configuration is not given to an IPv6 address.
	sameJSON(t, build(t, parsed(t, conf(m{"gateway": "10.10.0.254"}, nil)), v6), `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "fd00:10::7/64", "gateway": "fd00:10::1"}],
		"routes": [{"dst": "::/0", "gw": "fd00:10::1"}],
		"dns": {}
	}`, "an IPv4 ipam.gateway")
}

func TestDualStackConfiguredRoutesAndGatewayGoWithTheirFamily(t *testing.T) {
	c := parsed(t, conf(m{
		"gateway": "fd00:10::fe",
		"routes":  []m{{"dst": "10.96.0.0/12"}, {"dst": "fd00:96::/108"}, {"dst": "192.168.0.0/16", "gw": "10.10.0.9"}},
		"mtu":     1400,
	}, m{"cniVersion": "1.1.0"}))
	sameJSON(t, build(t, c, v4, v6), `{
		"cniVersion": "1.1.0",
		"ips": [{"address": "10.10.0.7/16", "gateway": "10.10.0.1"}, {"address": "fd00:10::7/64", "gateway": "fd00:10::fe"}],
		"routes": [
			{"dst": "10.96.0.0/12", "gw": "10.10.0.1", "mtu": 1400},
			{"dst": "fd00:96::/108", "gw": "fd00:10::fe", "mtu": 1400},
			{"dst": "192.168.0.0/16", "gw": "10.10.0.9", "mtu": 1400}
		],
		"dns": {}
	}`)
	// Routes of a family the pod has no address of are left out.
	routes, _ := build(t, c, v6).get("routes")
	sameJSON(t, routes, `[{"dst": "fd00:96::/108", "gw": "fd00:10::fe", "mtu": 1400}]`, "IPv6 only")
	// A family whose NNC gives no gateway of its own: no gateway, no default route.
	noGw := infoOf("fd00:10::7", 64, "10.10.0.1")
	sameJSON(t, build(t, parsed(t, conf(nil, nil)), v4, noGw), `{
		"cniVersion": "1.0.0",
		"ips": [{"address": "10.10.0.7/16", "gateway": "10.10.0.1"}, {"address": "fd00:10::7/64"}],
		"routes": [{"dst": "0.0.0.0/0", "gw": "10.10.0.1"}],
		"dns": {}
	}`, "IPv6 without a gateway")
}

func TestAnAnswerWithTwoOfOneFamilyOrABadPrefixIsTheNodeAPIsError(t *testing.T) {
	c := parsed(t, conf(nil, nil))
	for what, infos := range map[string][]interface{}{
		"two IPv4":      {v4, infoOf("10.10.0.8", 16, "10.10.0.1")},
		"two IPv6":      {v6, v4, infoOf("fd00:10::8", 64, "fd00:10::1")},
		"none":          {},
		"/33":           {infoOf("10.10.0.7", 33, "")},
		"/129":          {infoOf("fd00::7", 129, "")},
		"/1.5":          {infoOf("10.10.0.7", 1.5, "")},
		"a zone":        {infoOf("fe80::1%eth0", 64, "")},
		"no prefix":     {m{"PodIPConfig": m{"IPAddress": "10.10.0.7"}}},
		"not an object": {"10.10.0.7"},
	} {
		_, err := buildResult(c, infos)
		if e, ok := err.(*errorResult); !ok || e.Code != codeNodeAPIError {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if _, err := buildResult(c, nil); err == nil {
		t.Fatal("no podIPInfo: no error")
	}
}
