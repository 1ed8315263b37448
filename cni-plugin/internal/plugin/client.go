// The node API as the plugin calls it: JSON over HTTP on the sidecar's unix
// socket or loopback port, the bearer token read from its file once per
// invocation. Each call has its own deadline (30 s: a node starting 110
// pods at once answers slowly); a connection that fails or times out is
// reported as "try again later" (the sidecar restarts, the runtime retries).
package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// apiAnswer is the node API's status and JSON body (nil when it is not JSON).
type apiAnswer struct {
	Status int
	Body   interface{}
}

// nodeAPIClient calls the node API: a JSON POST, or a GET without body.
// It fails with a *errorResult when the sidecar cannot be reached.
type nodeAPIClient interface {
	call(method, path string, body interface{}) (apiAnswer, error)
}

// readToken is the token from the configured file: absent and not asked
// for, none. A file group or others may read or write is refused: the
// token opens the node API to whoever holds it (DESIGN: on the host,
// readable by root only). The mode is taken from the open file, so it is
// the mode of what is read.
func readToken(file tokenFile) (string, error) {
	f, err := os.Open(file.Path)
	if err != nil {
		if !file.Required && errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", invalidConfig("ipam.tokenFile", file.Path+" cannot be read: "+err.Error())
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", invalidConfig("ipam.tokenFile", file.Path+" cannot be read: "+err.Error())
	}
	if !info.Mode().IsRegular() {
		return "", invalidConfig("ipam.tokenFile", file.Path+" is not a regular file")
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		return "", invalidConfig("ipam.tokenFile", fmt.Sprintf(
			"%s is open to group or others (mode %04o): the node API token must be its owner's only (chmod 600 %s)",
			file.Path, mode, file.Path))
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", invalidConfig("ipam.tokenFile", file.Path+" cannot be read: "+err.Error())
	}
	return strings.TrimSpace(string(data)), nil
}

type httpClient struct {
	conf      *ipamConfig
	timeout   time.Duration
	client    *http.Client
	base      string
	token     string
	tokenRead bool
}

// newNodeAPIClient is the client of the configured node API.
func newNodeAPIClient(conf *ipamConfig, timeout time.Duration) nodeAPIClient {
	transport := &http.Transport{Proxy: nil, DisableCompression: true}
	base := "http://" + net.JoinHostPort(conf.NodeAPI.Host, strconv.Itoa(conf.NodeAPI.Port))
	if conf.NodeAPI.Kind == "unix" {
		socket := conf.NodeAPI.Path
		var d net.Dialer
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		}
		base = "http://localhost"
	}
	return &httpClient{
		conf:    conf,
		timeout: timeout,
		client:  &http.Client{Transport: transport, Timeout: timeout},
		base:    base,
	}
}

func (c *httpClient) call(method, path string, body interface{}) (apiAnswer, error) {
	if !c.tokenRead {
		token, err := readToken(c.conf.TokenFile)
		if err != nil {
			return apiAnswer{}, err
		}
		c.token, c.tokenRead = token, true
	}
	var reader io.Reader
	if body != nil {
		data, err := marshal(body)
		if err != nil {
			return apiAnswer{}, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, reader)
	if err != nil {
		return apiAnswer{}, c.unreachable(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return apiAnswer{}, c.unreachable(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return apiAnswer{}, c.unreachable(err)
	}
	parsed, err := decode(data)
	if err != nil {
		parsed = nil
	}
	return apiAnswer{Status: res.StatusCode, Body: parsed}, nil
}

func (c *httpClient) unreachable(err error) *errorResult {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		if urlErr.Timeout() {
			err = errors.New("no answer within " + strconv.FormatInt(c.timeout.Milliseconds(), 10) + " ms")
		} else {
			err = urlErr.Err
		}
	}
	return cniError(codeTryAgainLater,
		"cannot reach the node's pool-monitor sidecar at %s: %s (is the pool-monitor DaemonSet running on this node?)",
		c.conf.NodeAPIText, err.Error())
}
