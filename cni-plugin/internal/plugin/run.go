// Package plugin is pool-monitor-cni: a CNI IPAM plugin (spec 1.0.0 and
// 1.1.0) whose addresses come from the node's pool-monitor sidecar over its
// node API. Invoked by the runtime (or a main plugin delegating IPAM) with
// CNI_* in the environment and the network configuration on stdin; writes
// the result or the error JSON on stdout, exits 0 or 1
// (docs/decisions/0032). Main is all it exports; ../../main.go calls it.
package plugin

import (
	"fmt"
	"io"
	"time"
)

// run is one invocation: what to print (nil: nothing) and the exit status.
// runDeps left nil are the real ones.
func run(env func(string) string, stdin func() ([]byte, error), deps runDeps) (out interface{}, code int) {
	cniVersion := "1.1.0"
	defer func() {
		if p := recover(); p != nil {
			out, code = cniError(codeTryAgainLater, "unexpected: %v", p).asJSON(cniVersion), 1
		}
	}()
	fail := func(err error) (interface{}, int) {
		e, ok := err.(*errorResult)
		if !ok {
			e = cniError(codeTryAgainLater, "unexpected: %s", err.Error())
		}
		return e.asJSON(cniVersion), 1
	}
	inv, err := parseInvocation(env)
	if err != nil {
		return fail(err)
	}
	data, err := stdin()
	if err != nil {
		return fail(cniError(codeIoFailure, "cannot read the network configuration on stdin: %s", err.Error()))
	}
	raw, err := parseJSON(data)
	if err != nil {
		return fail(err)
	}
	if asked, isStr := raw["cniVersion"].(string); isStr {
		cniVersion = asked
	}
	if inv.Command == "VERSION" {
		// Any version the runtime speaks may ask which ones this plugin does.
		return versionResult(cniVersion), 0
	}
	if _, err := versionOf(raw); err != nil {
		return fail(err)
	}
	conf, err := parseConfig(raw)
	if err != nil {
		return fail(err)
	}
	if deps.Client == nil {
		deps.Client = newNodeAPIClient(conf, 30*time.Second)
	}
	if deps.Now == nil {
		deps.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if deps.Sleep == nil {
		deps.Sleep = func(ms int64) { time.Sleep(time.Duration(ms) * time.Millisecond) }
	}
	switch inv.Command {
	case "ADD":
		out, err = add(conf, inv, deps)
	case "DEL":
		out, err = del(conf, inv, deps)
	case "CHECK":
		out, err = check(conf, inv, deps)
	case "GC":
		out, err = gc(conf, deps)
	default: // STATUS
		out, err = status(deps)
	}
	if err != nil {
		return fail(err)
	}
	return out, 0
}

// Main is one invocation with the process's environment, stdin and stdout:
// it writes the result or the error JSON and returns the exit status.
func Main(getenv func(string) string, stdin io.Reader, stdout io.Writer) int {
	out, code := run(getenv, func() ([]byte, error) { return io.ReadAll(stdin) }, runDeps{})
	if out != nil {
		data, err := marshal(out)
		if err != nil {
			data, code = []byte(`{"cniVersion":"1.1.0","code":11,"msg":"unexpected: the result cannot be written"}`), 1
		}
		fmt.Fprintf(stdout, "%s\n", data)
	}
	return code
}
