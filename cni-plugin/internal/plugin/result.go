// The IPAM result (spec "Success") built from the sidecar's answer and the
// configuration: one address per family the sidecar assigned (IPv4 first,
// DESIGN "Address families"), each with its pod subnet's prefix and its
// family's gateway; the routes (a default route per family through that
// family's gateway unless `routes` says otherwise) and DNS, for CNI 0.3.x,
// 0.4.0, 1.0.0 and 1.1.0. Pure.
package plugin

import (
	"net/netip"
	"strconv"
	"strings"
)

// assigned is one podIPInfo entry of the node API's answer: the pod's
// address of one family, its subnet's prefix length and that family's
// gateway from the NNC ("" when it gives none of this family).
type assigned struct {
	prefix  netip.Prefix
	family  int
	gateway string
}

// assignedOf reads an answer's podIPInfo: at least one entry, at most one
// per family, ordered IPv4 first. Anything else is the node API's error.
func assignedOf(podIPInfo interface{}) ([]assigned, error) {
	infos, _ := podIPInfo.([]interface{})
	if len(infos) == 0 {
		return nil, cniError(codeNodeAPIError, "the node API answered without an address: %s", jsonText(podIPInfo, true))
	}
	byFamily := map[int]assigned{}
	for _, info := range infos {
		address, _ := path(info, "PodIPConfig", "IPAddress").(string)
		bits, isNum := path(info, "PodIPConfig", "PrefixLength").(float64)
		ip, err := netip.ParseAddr(address)
		if err != nil || ip.Zone() != "" || !isNum || bits != float64(int(bits)) || bits < 0 || int(bits) > ip.BitLen() {
			return nil, cniError(codeNodeAPIError, "the node API answered without an address: %s", jsonText(info, true))
		}
		a := assigned{prefix: netip.PrefixFrom(ip, int(bits)), family: ipFamily(address)}
		if _, twice := byFamily[a.family]; twice {
			return nil, cniError(codeNodeAPIError, "the node API answered two IPv%d addresses: %s",
				a.family, jsonText(podIPInfo, true))
		}
		gateway, _ := path(info, "NetworkContainerPrimaryIPConfig", "GatewayIPAddress").(string)
		if ipFamily(gateway) == a.family {
			a.gateway = gateway
		}
		byFamily[a.family] = a
	}
	out := []assigned{}
	for _, family := range []int{4, 6} {
		if a, ok := byFamily[family]; ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// buildResult is the result for the node API's podIPInfo.
func buildResult(conf *ipamConfig, podIPInfo interface{}) (object, error) {
	addresses, err := assignedOf(podIPInfo)
	if err != nil {
		return nil, err
	}
	gateways := map[int]string{}
	ips := []object{}
	for _, a := range addresses {
		// ipam.gateway overrides the NNC's gateway of its own family only.
		gateway := a.gateway
		if conf.Gateway != "" && ipFamily(conf.Gateway) == a.family {
			gateway = conf.Gateway
		}
		gateways[a.family] = gateway
		entry := object{{"address", a.prefix.String()}}
		if gateway != "" {
			entry = append(entry, kv{"gateway", gateway})
		}
		// Versions before 1.0.0 carry `version` in each ips entry.
		if strings.HasPrefix(conf.CniVersion, "0.") {
			entry = append(entry, kv{"version", strconv.Itoa(a.family)})
		}
		ips = append(ips, entry)
	}
	wanted := conf.Routes
	if wanted == nil {
		wanted = []routeConf{}
		for _, a := range addresses {
			if gateways[a.family] == "" {
				continue
			}
			dst := "0.0.0.0/0"
			if a.family == 6 {
				dst = "::/0"
			}
			wanted = append(wanted, routeConf{Dst: dst})
		}
	}
	routes := []object{}
	for _, r := range wanted {
		family := ipFamily(strings.SplitN(r.Dst, "/", 2)[0])
		gateway, held := gateways[family]
		if !held {
			// A route of a family the pod has no address of.
			continue
		}
		route := object{{"dst", r.Dst}}
		if r.Gw != "" {
			route = append(route, kv{"gw", r.Gw})
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
		{"ips", ips},
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
