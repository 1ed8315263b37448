// The client over real HTTP: a unix socket or a loopback URL, the bearer
// token from its file (read once per invocation), a sidecar that is not
// there or does not answer, and whole invocations against a server.
package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type seen struct {
	Method, Path, ContentType, Authorization, Body string
}

// server answers every request with status and body and records what it got.
func server(t *testing.T, unix bool, status int, body string) (*httptest.Server, string, *[]seen) {
	t.Helper()
	var mu sync.Mutex
	got := []seen{}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	address := ""
	if unix {
		sock := filepath.Join(t.TempDir(), "cns.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		s.Listener = l
		address = "unix:" + sock
	}
	s.Start()
	t.Cleanup(s.Close)
	if !unix {
		address = s.URL
	}
	return s, address, &got
}

func clientConf(t *testing.T, nodeAPI string, token *string) *ipamConfig {
	t.Helper()
	ipam := m{"nodeAPI": nodeAPI}
	if token != nil {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte(*token), 0o600); err != nil {
			t.Fatal(err)
		}
		ipam["tokenFile"] = file
	}
	return parsed(t, conf(ipam, nil))
}

func TestClientOverAUnixSocketAndAURLWithTheToken(t *testing.T) {
	for _, unix := range []bool{true, false} {
		_, address, got := server(t, unix, 200, `{"response":{"ReturnCode":0}}`)
		token := "a-token-of-sixteen-chars\n"
		c := newNodeAPIClient(clientConf(t, address, &token), 5*time.Second)
		answer, err := c.call("POST", "/network/releaseipconfigs", object{{"podInterfaceID", "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if answer.Status != 200 || !isNumber(path(answer.Body, "response", "ReturnCode"), 0) {
			t.Fatalf("%s: %+v", address, answer)
		}
		if _, err := c.call("GET", "/readyz", nil); err != nil {
			t.Fatal(err)
		}
		want := []seen{
			{"POST", "/network/releaseipconfigs", "application/json", "Bearer a-token-of-sixteen-chars", `{"podInterfaceID":"x"}`},
			{"GET", "/readyz", "", "Bearer a-token-of-sixteen-chars", ""},
		}
		if len(*got) != 2 || (*got)[0] != want[0] || (*got)[1] != want[1] {
			t.Fatalf("%s: the server saw %+v", address, *got)
		}
	}
}

func TestClientWithoutATokenAndWithOneItCannotRead(t *testing.T) {
	_, address, got := server(t, false, 200, `not json`)
	// The default token file, absent: no token, no error.
	c := parsed(t, conf(m{"nodeAPI": address}, nil))
	c.TokenFile.Path = filepath.Join(t.TempDir(), "absent")
	answer, err := newNodeAPIClient(c, time.Second).call("GET", "/readyz", nil)
	if err != nil || answer.Status != 200 || answer.Body != nil || (*got)[0].Authorization != "" {
		t.Fatalf("%+v %v %+v", answer, err, *got)
	}
	// A token file the configuration names must be there.
	c.TokenFile.Required = true
	_, err = newNodeAPIClient(c, time.Second).call("GET", "/readyz", nil)
	if e, ok := err.(*errorResult); !ok || e.Code != codeInvalidConfig ||
		!strings.HasPrefix(e.Msg, "invalid network configuration: ipam.tokenFile "+c.TokenFile.Path+" cannot be read: ") {
		t.Fatalf("required token: %v", err)
	}
	// An empty one is no token.
	empty := " \n"
	_, address, got = server(t, true, 200, `{}`)
	if _, err := newNodeAPIClient(clientConf(t, address, &empty), time.Second).call("GET", "/readyz", nil); err != nil ||
		(*got)[0].Authorization != "" {
		t.Fatalf("empty token: %v %+v", err, *got)
	}
}

// The token opens the node API to whoever holds it: a file that group or
// others can read or write is refused, named with its mode, and nothing is
// sent; the same holds for the default file when it is there.
func TestClientRefusesATokenFileOthersCanRead(t *testing.T) {
	_, address, got := server(t, true, 200, `{}`)
	token := "tok"
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602, 0o666} {
		c := clientConf(t, address, &token)
		if err := os.Chmod(c.TokenFile.Path, mode); err != nil {
			t.Fatal(err)
		}
		for _, required := range []bool{true, false} {
			c.TokenFile.Required = required
			_, err := newNodeAPIClient(c, time.Second).call("GET", "/readyz", nil)
			want := fmt.Sprintf("invalid network configuration: ipam.tokenFile %s is open to group or others (mode %04o): "+
				"the node API token must be its owner's only (chmod 600 %s)", c.TokenFile.Path, mode, c.TokenFile.Path)
			if e, ok := err.(*errorResult); !ok || e.Code != codeInvalidConfig || e.Msg != want {
				t.Fatalf("mode %04o: %v", mode, err)
			}
		}
	}
	dir := clientConf(t, address, nil)
	dir.TokenFile = tokenFile{Path: t.TempDir(), Required: true}
	if _, err := newNodeAPIClient(dir, time.Second).call("GET", "/readyz", nil); err == nil ||
		err.Error() != "invalid network configuration: ipam.tokenFile "+dir.TokenFile.Path+" is not a regular file" {
		t.Fatalf("a directory: %v", err)
	}
	if len(*got) != 0 {
		t.Fatalf("sent %+v", *got)
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		c := clientConf(t, address, &token)
		if err := os.Chmod(c.TokenFile.Path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := newNodeAPIClient(c, time.Second).call("GET", "/readyz", nil); err != nil {
			t.Fatalf("mode %04o: %v", mode, err)
		}
	}
}

func TestClientTellsTheSidecarIsNotThereOrDoesNotAnswer(t *testing.T) {
	gone := "unix:" + filepath.Join(t.TempDir(), "gone.sock")
	_, err := newNodeAPIClient(clientConf(t, gone, nil), time.Second).call("GET", "/readyz", nil)
	if e, ok := err.(*errorResult); !ok || e.Code != codeTryAgainLater ||
		!strings.HasPrefix(e.Msg, "cannot reach the node's pool-monitor sidecar at "+gone+": ") ||
		!strings.HasSuffix(e.Msg, " (is the pool-monitor DaemonSet running on this node?)") {
		t.Fatalf("gone: %v", err)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond)
	}))
	defer slow.Close()
	_, err = newNodeAPIClient(clientConf(t, slow.URL, nil), 200*time.Millisecond).call("GET", "/readyz", nil)
	if e, ok := err.(*errorResult); !ok || e.Code != codeTryAgainLater || !strings.Contains(e.Msg, "no answer within 200 ms") {
		t.Fatalf("slow: %v", err)
	}
}

// Whole invocations against a server, the client run makes itself.
func TestRunAgainstANodeAPIOverItsSocket(t *testing.T) {
	body, _ := json.Marshal(m{"podIPInfo": []interface{}{info}, "response": m{"ReturnCode": 0, "Message": ""}})
	_, address, got := server(t, true, 200, string(body))
	token := "tok"
	stdin := conf(m{"nodeAPI": address, "tokenFile": clientConf(t, address, &token).TokenFile.Path}, nil)
	out, code := run(func(k string) string { return baseEnv[k] }, func() ([]byte, error) { return []byte(stdin), nil }, runDeps{})
	if code != 0 {
		t.Fatalf("ADD: %v", plain(t, out))
	}
	sameJSON(t, out, `{"cniVersion":"1.0.0","ips":[{"address":"10.10.0.7/16","gateway":"10.10.0.1"}],
		"routes":[{"dst":"0.0.0.0/0","gw":"10.10.0.1"}],"dns":{}}`)
	if (*got)[0].Authorization != "Bearer tok" {
		t.Fatalf("ADD sent %+v", *got)
	}
	gone := conf(m{"nodeAPI": "unix:" + filepath.Join(t.TempDir(), "gone.sock")}, m{"cniVersion": "1.1.0"})
	status := func(k string) string { return map[string]string{"CNI_COMMAND": "STATUS"}[k] }
	out, code = run(status, func() ([]byte, error) { return []byte(gone), nil }, runDeps{})
	errorOf(t, out, code, 50, `^pool-monitor-cni cannot serve: cannot reach the node's pool-monitor sidecar`, "STATUS")
	out, code = run(func(k string) string { return baseEnv[k] }, func() ([]byte, error) { return []byte(gone), nil }, runDeps{})
	errorOf(t, out, code, 11, `^cannot reach the node's pool-monitor sidecar`, "ADD")
	out, code = run(func(k string) string { return baseEnv[k] }, func() ([]byte, error) { return nil, io.ErrUnexpectedEOF }, runDeps{})
	errorOf(t, out, code, 5, `^cannot read the network configuration on stdin`, "stdin")
}
