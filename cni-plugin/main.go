// pool-monitor-cni: a CNI IPAM plugin (spec 1.0.0 and 1.1.0) whose addresses
// come from the node's pool-monitor sidecar over its node API. Invoked by
// the runtime (or a main plugin delegating IPAM) with CNI_* in the
// environment and the network configuration on stdin; writes the result or
// the error JSON on stdout, exits 0 or 1 (docs/decisions/0032).
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// Run is one invocation: what to print (nil: nothing) and the exit status.
// Deps left nil are the real ones.
func Run(env func(string) string, stdin func() ([]byte, error), deps Deps) (out interface{}, code int) {
	cniVersion := "1.1.0"
	defer func() {
		if p := recover(); p != nil {
			out, code = cniError(CodeTryAgainLater, "unexpected: %v", p).JSON(cniVersion), 1
		}
	}()
	fail := func(err error) (interface{}, int) {
		e, ok := err.(*CniError)
		if !ok {
			e = cniError(CodeTryAgainLater, "unexpected: %s", err.Error())
		}
		return e.JSON(cniVersion), 1
	}
	inv, err := ParseInvocation(env)
	if err != nil {
		return fail(err)
	}
	data, err := stdin()
	if err != nil {
		return fail(cniError(CodeIoFailure, "cannot read the network configuration on stdin: %s", err.Error()))
	}
	raw, err := ParseJSON(data)
	if err != nil {
		return fail(err)
	}
	if asked, isStr := raw["cniVersion"].(string); isStr {
		cniVersion = asked
	}
	if inv.Command == "VERSION" {
		// Any version the runtime speaks may ask which ones this plugin does.
		return Version(cniVersion), 0
	}
	if _, err := VersionOf(raw); err != nil {
		return fail(err)
	}
	conf, err := ParseConfig(raw)
	if err != nil {
		return fail(err)
	}
	if deps.Client == nil {
		deps.Client = NewNodeAPIClient(conf, 30*time.Second)
	}
	if deps.Now == nil {
		deps.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if deps.Sleep == nil {
		deps.Sleep = func(ms int64) { time.Sleep(time.Duration(ms) * time.Millisecond) }
	}
	switch inv.Command {
	case "ADD":
		out, err = Add(conf, inv, deps)
	case "DEL":
		out, err = Del(conf, inv, deps)
	case "CHECK":
		out, err = Check(conf, inv, deps)
	case "GC":
		out, err = Gc(conf, deps)
	default: // STATUS
		out, err = Status(deps)
	}
	if err != nil {
		return fail(err)
	}
	return out, 0
}

func main() {
	out, code := Run(os.Getenv, func() ([]byte, error) { return io.ReadAll(os.Stdin) }, Deps{})
	if out != nil {
		data, err := marshal(out)
		if err != nil {
			data, code = []byte(`{"cniVersion":"1.1.0","code":11,"msg":"unexpected: the result cannot be written"}`), 1
		}
		fmt.Fprintf(os.Stdout, "%s\n", data)
	}
	os.Exit(code)
}
