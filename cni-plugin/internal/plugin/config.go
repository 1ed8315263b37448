// The plugin's input, parsed and checked before anything is asked of the
// node: the network configuration on stdin (its `ipam` section, or the top
// level for GC and STATUS invoked directly). Pure: each function returns a
// checked value or a *errorResult naming the key.
package plugin

import (
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

const (
	pluginType = "pool-monitor-cni"
	// Where the DaemonSet's sidecar listens when it is locked down (README "Security").
	defaultNodeAPI   = "unix:/run/pool-monitor/cns.sock"
	defaultTokenFile = "/run/pool-monitor/node-api-token"
	// How long ADD waits out "no address yet" (ReturnCode 32) by default.
	defaultAddTimeoutSeconds = 60
)

// supportedVersions are the CNI versions this plugin speaks.
var supportedVersions = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// nodeAPIAddress is `unix:/path` (Kind "unix", Path) or `http://host:port` (Kind "http").
type nodeAPIAddress struct {
	Kind string
	Path string
	Host string
	Port int
}

// routeConf is one configured route; Gw empty: the gateway.
type routeConf struct {
	Dst string
	Gw  string
}

// dnsConf is the configured DNS; a nil slice or empty Domain is not given.
type dnsConf struct {
	Nameservers []string
	Domain      string
	Search      []string
	Options     []string
}

// tokenFile is the bearer token's file; Required when the configuration names it.
type tokenFile struct {
	Path     string
	Required bool
}

// gcAttachment is one entry of a GC's `cni.dev/valid-attachments`.
type gcAttachment struct {
	ContainerID string
	IfName      string
}

// ipamConfig is the plugin's checked configuration.
type ipamConfig struct {
	CniVersion string
	// The network's name: the start of every attachment's interface id.
	Network     string
	NodeAPI     nodeAPIAddress
	NodeAPIText string
	TokenFile   tokenFile
	// Overrides the gateway the node's NNC gives ("": none).
	Gateway string
	// The routes the result carries (gateway filled in); nil: a default route.
	Routes []routeConf
	DNS    *dnsConf
	MTU    int
	// How long ADD waits out ReturnCode 32.
	AddTimeoutSeconds int
	// GC: the attachments the runtime still knows, when it gave a list
	// (HasAttachmentList); without one GC releases nothing.
	ValidAttachments  []gcAttachment
	HasAttachmentList bool
	// CHECK: the result the chain gave at ADD.
	PrevResult    interface{}
	HasPrevResult bool
}

type obj = map[string]interface{}

func str(o obj, key, at string) (string, bool, error) {
	v, ok := o[key]
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr || s == "" {
		return "", false, invalidConfig(at+key, "must be a non-empty string")
	}
	return s, true, nil
}

// ipFamily is 4 or 6 for an IP address as Node's net.isIP reads it, 0 otherwise.
func ipFamily(s string) int {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return 0
	}
	if a.Is4() {
		return 4
	}
	return 6
}

func ip(o obj, key, at string) (string, error) {
	v, ok, err := str(o, key, at)
	if err != nil {
		return "", err
	}
	if ok && ipFamily(v) == 0 {
		return "", invalidConfig(at+key, "is not an IP address: "+v)
	}
	return v, nil
}

func strs(o obj, key, at string) ([]string, error) {
	v, ok := o[key]
	if !ok {
		return nil, nil
	}
	a, isArray := v.([]interface{})
	if !isArray {
		return nil, invalidConfig(at+key, "must be an array of strings")
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		s, isStr := e.(string)
		if !isStr {
			return nil, invalidConfig(at+key, "must be an array of strings")
		}
		out = append(out, s)
	}
	return out, nil
}

// parseNodeAPI reads `unix:/path` or `http://host:port`.
func parseNodeAPI(text, key string) (nodeAPIAddress, error) {
	if strings.HasPrefix(text, "unix:") {
		p := strings.TrimPrefix(text, "unix:")
		if !strings.HasPrefix(p, "/") {
			return nodeAPIAddress{}, invalidConfig(key, "must name an absolute socket path: "+text)
		}
		return nodeAPIAddress{Kind: "unix", Path: p}, nil
	}
	bad := invalidConfig(key, "must be unix:/path or http://host:port, got "+jsonText(text, true))
	u, err := url.Parse(text)
	if err != nil || u.Scheme != "http" || u.Opaque != "" || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery {
		return nodeAPIAddress{}, bad
	}
	port := 80
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n > 65535 {
			return nodeAPIAddress{}, bad
		}
		port = n
	}
	host := u.Hostname()
	if host == "" {
		return nodeAPIAddress{}, bad
	}
	return nodeAPIAddress{Kind: "http", Host: host, Port: port}, nil
}

var cidrPattern = regexp.MustCompile(`^([^/]+)/([0-9]{1,3})$`)

func parseRoutes(o obj, at string) ([]routeConf, error) {
	v, ok := o["routes"]
	if !ok {
		return nil, nil
	}
	a, isArray := v.([]interface{})
	if !isArray {
		return nil, invalidConfig(at+"routes", "must be an array of {dst, gw}")
	}
	out := make([]routeConf, 0, len(a))
	for i, e := range a {
		each := at + "routes[" + strconv.Itoa(i) + "]"
		r, isObj := e.(obj)
		if !isObj {
			return nil, invalidConfig(each, "must be an object {dst, gw}")
		}
		dst, has, err := str(r, "dst", each+".")
		if err != nil {
			return nil, err
		}
		m := cidrPattern.FindStringSubmatch(dst)
		valid := m != nil && ipFamily(m[1]) != 0
		if valid {
			bits, _ := strconv.Atoi(m[2])
			max := 32
			if ipFamily(m[1]) == 6 {
				max = 128
			}
			valid = bits <= max
		}
		if !valid {
			return nil, invalidConfig(each+".dst", "must be a CIDR, got "+jsonText(dst, has))
		}
		gw, err := ip(r, "gw", each+".")
		if err != nil {
			return nil, err
		}
		out = append(out, routeConf{Dst: dst, Gw: gw})
	}
	return out, nil
}

func parseDNS(o obj, at string) (*dnsConf, error) {
	v, ok := o["dns"]
	if !ok {
		return nil, nil
	}
	d, isObj := v.(obj)
	if !isObj {
		return nil, invalidConfig(at+"dns", "must be an object {nameservers, domain, search, options}")
	}
	var out dnsConf
	var err error
	if out.Nameservers, err = strs(d, "nameservers", at+"dns."); err != nil {
		return nil, err
	}
	for i, n := range out.Nameservers {
		if ipFamily(n) == 0 {
			return nil, invalidConfig(at+"dns.nameservers["+strconv.Itoa(i)+"]", "is not an IP address: "+n)
		}
	}
	if out.Domain, _, err = str(d, "domain", at+"dns."); err != nil {
		return nil, err
	}
	if out.Search, err = strs(d, "search", at+"dns."); err != nil {
		return nil, err
	}
	if out.Options, err = strs(d, "options", at+"dns."); err != nil {
		return nil, err
	}
	return &out, nil
}

// positive is a whole number from 1 to max, or 0 when not given.
func positive(o obj, key, at string, max int) (int, error) {
	v, ok := o[key]
	if !ok {
		return 0, nil
	}
	f, isNum := v.(float64)
	if !isNum || f != math.Trunc(f) || f < 1 || f > float64(max) {
		return 0, invalidConfig(at+key, "must be a whole number from 1 to "+strconv.Itoa(max))
	}
	return int(f), nil
}

// The keys a GC's list of still-valid attachments comes under. The
// published 1.1.0 text (SPEC.md of containernetworking/cni v1.2.0 to
// v1.2.2) names it cni.dev/attachments, libcni has always sent
// cni.dev/valid-attachments, and since containernetworking/cni#1103
// (v1.2.3) the spec says valid-attachments and libcni sends both
// (libcni/api.go, GCNetworkList).
var attachmentListKeys = []string{"cni.dev/valid-attachments", "cni.dev/attachments"}

// parseValidAttachments is the union of the lists under either key, and
// whether any list was given. A key absent or null is no list: libcni's
// GCNetworkList sends no key when its args are nil, and null when their
// ValidAttachments slice is nil (InjectConf only refuses an untyped nil).
// An attachment either list names is kept.
func parseValidAttachments(conf obj) ([]gcAttachment, bool, error) {
	out, listed := []gcAttachment{}, false
	for _, key := range attachmentListKeys {
		v, ok := conf[key]
		if !ok || v == nil {
			continue
		}
		a, isArray := v.([]interface{})
		if !isArray {
			return nil, false, invalidConfig(key, "must be an array")
		}
		listed = true
		for i, e := range a {
			each := key + "[" + strconv.Itoa(i) + "]"
			o, isObj := e.(obj)
			if !isObj {
				return nil, false, invalidConfig(each, "must be an object {containerID, ifname}")
			}
			containerID, hasID, err := str(o, "containerID", each+".")
			if err != nil {
				return nil, false, err
			}
			ifname, hasIf, err := str(o, "ifname", each+".")
			if err != nil {
				return nil, false, err
			}
			if !hasID || !hasIf {
				return nil, false, invalidConfig(each, "needs containerID and ifname")
			}
			out = append(out, gcAttachment{ContainerID: containerID, IfName: ifname})
		}
	}
	if !listed {
		return nil, false, nil
	}
	return out, true, nil
}

// versionOf is the cniVersion of a configuration, checked against what this plugin speaks.
func versionOf(conf obj) (string, error) {
	v, _ := conf["cniVersion"].(string)
	if v == "" {
		return "", invalidConfig("cniVersion", `is required (a string such as "1.0.0")`)
	}
	for _, s := range supportedVersions {
		if s == v {
			return v, nil
		}
	}
	return "", cniError(codeIncompatibleVersion, "incompatible CNI version %s: this plugin supports %s",
		v, strings.Join(supportedVersions, ", "))
}

// parseJSON reads stdin's JSON text: an object.
func parseJSON(data []byte) (obj, error) {
	v, err := decode(data)
	if err != nil {
		return nil, cniError(codeDecodeFailure, "the network configuration on stdin is not JSON: %s", err.Error())
	}
	o, isObj := v.(obj)
	if !isObj {
		return nil, cniError(codeDecodeFailure, "the network configuration on stdin must be a JSON object")
	}
	return o, nil
}

// parseConfig is the plugin's configuration: the `ipam` section of the
// network configuration, or (GC and STATUS called on the plugin itself)
// its top level.
func parseConfig(conf obj) (*ipamConfig, error) {
	cniVersion, err := versionOf(conf)
	if err != nil {
		return nil, err
	}
	network, _ := conf["name"].(string)
	if !namePattern.MatchString(network) || len(network) > 128 {
		return nil, invalidConfig("name", "must be a network name of letters, digits, _ . - (at most 128)")
	}
	ipam, at := conf, ""
	if v, hasIpam := conf["ipam"]; hasIpam {
		section, isObj := v.(obj)
		if !isObj {
			return nil, invalidConfig("ipam", "must be an object")
		}
		ipam, at = section, "ipam."
		if t, ok := section["type"]; !ok || t != pluginType {
			return nil, invalidConfig("ipam.type", `must be "`+pluginType+`", got `+jsonText(t, ok))
		}
	}
	c := &ipamConfig{CniVersion: cniVersion, Network: network}
	nodeAPIText, has, err := str(ipam, "nodeAPI", at)
	if err != nil {
		return nil, err
	}
	if !has {
		nodeAPIText = defaultNodeAPI
	}
	c.NodeAPIText = nodeAPIText
	tokenPath, has, err := str(ipam, "tokenFile", at)
	if err != nil {
		return nil, err
	}
	if has && !strings.HasPrefix(tokenPath, "/") {
		return nil, invalidConfig(at+"tokenFile", "must be an absolute path")
	}
	c.TokenFile = tokenFile{Path: tokenPath, Required: has}
	if !has {
		c.TokenFile.Path = defaultTokenFile
	}
	if c.Gateway, err = ip(ipam, "gateway", at); err != nil {
		return nil, err
	}
	if c.Routes, err = parseRoutes(ipam, at); err != nil {
		return nil, err
	}
	if c.DNS, err = parseDNS(ipam, at); err != nil {
		return nil, err
	}
	if c.MTU, err = positive(ipam, "mtu", at, 65535); err != nil {
		return nil, err
	}
	if c.ValidAttachments, c.HasAttachmentList, err = parseValidAttachments(conf); err != nil {
		return nil, err
	}
	if c.NodeAPI, err = parseNodeAPI(nodeAPIText, at+"nodeAPI"); err != nil {
		return nil, err
	}
	if c.AddTimeoutSeconds, err = positive(ipam, "addTimeoutSeconds", at, 3600); err != nil {
		return nil, err
	}
	if c.AddTimeoutSeconds == 0 {
		c.AddTimeoutSeconds = defaultAddTimeoutSeconds
	}
	c.PrevResult, c.HasPrevResult = conf["prevResult"]
	return c, nil
}
