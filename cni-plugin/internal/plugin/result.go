// The IPAM result (spec "Success") built from the sidecar's answer and the
// configuration: the address with the pod subnet's prefix, the gateway, the
// routes (a default route through the gateway unless `routes` says
// otherwise) and DNS, for CNI 0.3.x, 0.4.0, 1.0.0 and 1.1.0. Pure.
package plugin

import (
	"strconv"
	"strings"
)

// buildResult is the result for one podIPInfo entry of the node API's answer.
func buildResult(conf *ipamConfig, info interface{}) (object, error) {
	address, _ := path(info, "PodIPConfig", "IPAddress").(string)
	prefix, isNum := path(info, "PodIPConfig", "PrefixLength").(float64)
	family := ipFamily(address)
	if family == 0 || !isNum {
		return nil, cniError(codeNodeAPIError, "the node API answered without an address: %s", jsonText(info, true))
	}
	gateway := conf.Gateway
	if gateway == "" {
		fromNnc, _ := path(info, "NetworkContainerPrimaryIPConfig", "GatewayIPAddress").(string)
		if fromNnc != "" && ipFamily(fromNnc) == family {
			gateway = fromNnc
		}
	}
	ipEntry := object{{"address", address + "/" + strconv.FormatFloat(prefix, 'f', -1, 64)}}
	if gateway != "" {
		ipEntry = append(ipEntry, kv{"gateway", gateway})
	}
	// Versions before 1.0.0 carry `version` in each ips entry.
	if strings.HasPrefix(conf.CniVersion, "0.") {
		ipEntry = append(ipEntry, kv{"version", strconv.Itoa(family)})
	}
	wanted := conf.Routes
	if wanted == nil {
		wanted = []routeConf{}
		if gateway != "" {
			dst := "0.0.0.0/0"
			if family == 6 {
				dst = "::/0"
			}
			wanted = []routeConf{{Dst: dst}}
		}
	}
	routes := []object{}
	for _, r := range wanted {
		if ipFamily(strings.SplitN(r.Dst, "/", 2)[0]) != family {
			continue
		}
		route := object{{"dst", r.Dst}}
		if gw := r.Gw; gw != "" {
			route = append(route, kv{"gw", gw})
		} else if gateway != "" {
			route = append(route, kv{"gw", gateway})
		}
		// 1.1.0 routes may carry `mtu`.
		if conf.MTU != 0 && conf.CniVersion == "1.1.0" {
			route = append(route, kv{"mtu", conf.MTU})
		}
		routes = append(routes, route)
	}
	return object{
		{"cniVersion", conf.CniVersion},
		{"ips", []object{ipEntry}},
		{"routes", routes},
		{"dns", dnsOf(conf.DNS)},
	}, nil
}

func dnsOf(d *dnsConf) object {
	out := object{}
	if d == nil {
		return out
	}
	if d.Nameservers != nil {
		out = append(out, kv{"nameservers", d.Nameservers})
	}
	if d.Domain != "" {
		out = append(out, kv{"domain", d.Domain})
	}
	if d.Search != nil {
		out = append(out, kv{"search", d.Search})
	}
	if d.Options != nil {
		out = append(out, kv{"options", d.Options})
	}
	return out
}

// addressesOf is the addresses (without prefix) of a prevResult, for CHECK.
func addressesOf(prevResult interface{}) []string {
	ips, ok := path(prevResult, "ips").([]interface{})
	if !ok {
		return []string{}
	}
	out := []string{}
	for _, e := range ips {
		if a, isStr := path(e, "address").(string); isStr {
			if a = strings.SplitN(a, "/", 2)[0]; a != "" {
				out = append(out, a)
			}
		}
	}
	return out
}
