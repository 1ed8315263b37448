// The result per version: the address with the subnet prefix, the gateway
// and a default route through it; configured routes, gateway and MTU (on
// 1.1.0); `version` in 0.x results.
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

func build(t *testing.T, c *ipamConfig, i interface{}) object {
	t.Helper()
	r, err := buildResult(c, i)
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
	if _, err := buildResult(parsed(t, conf(nil, nil)), m{"PodIPConfig": m{"IPAddress": "x"}}); err == nil ||
		err.(*errorResult).Code != codeNodeAPIError {
		t.Fatalf("no address: %v", err)
	}
}

func TestAddressesOfAPrevResult(t *testing.T) {
	v, _ := decode([]byte(`{"ips":[{"address":"10.0.0.1/24"},{"address":5},{},{"address":"fd00::1/64"}]}`))
	sameJSON(t, addressesOf(v), `["10.0.0.1","fd00::1"]`)
	sameJSON(t, addressesOf(nil), `[]`)
}
