// The CNI spec's error result and its codes (spec 1.1.0, "Error"): codes
// 1-99 are the spec's own, a plugin's own start at 100. Every failure of
// the plugin is one *errorResult, written to stdout as the error JSON with a
// non-zero exit.
package plugin

import "fmt"

const (
	codeIncompatibleVersion = 1
	codeUnsupportedField    = 2
	codeUnknownContainer    = 3
	codeInvalidEnvironment  = 4
	codeIoFailure           = 5
	codeDecodeFailure       = 6
	codeInvalidConfig       = 7
	codeTryAgainLater       = 11
	// STATUS: the plugin cannot serve ADDs now.
	codeNotAvailable = 50
	// The node API refused the plugin's token (401/403).
	codeNodeAPIRefused = 100
	// The node API answered a request with an error of its own (4xx, a CNS ReturnCode).
	codeNodeAPIError = 101
	// CHECK: the sidecar holds another address for the attachment than the runtime's result.
	codeAddressMismatch = 102
)

// errorResult is what the runtime sees of a failure: a spec code and a message.
type errorResult struct {
	Code    int
	Msg     string
	Details string
}

func (e *errorResult) Error() string { return e.Msg }

func cniError(code int, format string, a ...interface{}) *errorResult {
	return &errorResult{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// asJSON is the spec's error JSON.
func (e *errorResult) asJSON(cniVersion string) object {
	out := object{{"cniVersion", cniVersion}, {"code", e.Code}, {"msg", e.Msg}}
	if e.Details != "" {
		out = append(out, kv{"details", e.Details})
	}
	return out
}

func invalidConfig(key, why string) *errorResult {
	return cniError(codeInvalidConfig, "invalid network configuration: %s %s", key, why)
}
