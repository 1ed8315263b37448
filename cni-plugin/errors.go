// The CNI spec's error result and its codes (spec 1.1.0, "Error"): codes
// 1-99 are the spec's own, a plugin's own start at 100. Every failure of
// the plugin is one *CniError, written to stdout as the error JSON with a
// non-zero exit.
package main

import "fmt"

const (
	CodeIncompatibleVersion = 1
	CodeUnsupportedField    = 2
	CodeUnknownContainer    = 3
	CodeInvalidEnvironment  = 4
	CodeIoFailure           = 5
	CodeDecodeFailure       = 6
	CodeInvalidConfig       = 7
	CodeTryAgainLater       = 11
	// STATUS: the plugin cannot serve ADDs now.
	CodeNotAvailable = 50
	// The node API refused the plugin's token (401/403).
	CodeNodeAPIRefused = 100
	// The node API answered a request with an error of its own (4xx, a CNS ReturnCode).
	CodeNodeAPIError = 101
	// CHECK: the sidecar holds another address for the attachment than the runtime's result.
	CodeAddressMismatch = 102
)

// CniError is what the runtime sees of a failure: a spec code and a message.
type CniError struct {
	Code    int
	Msg     string
	Details string
}

func (e *CniError) Error() string { return e.Msg }

func cniError(code int, format string, a ...interface{}) *CniError {
	return &CniError{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// JSON is the spec's error JSON.
func (e *CniError) JSON(cniVersion string) Object {
	out := Object{{"cniVersion", cniVersion}, {"code", e.Code}, {"msg", e.Msg}}
	if e.Details != "" {
		out = append(out, KV{"details", e.Details})
	}
	return out
}

func invalidConfig(key, why string) *CniError {
	return cniError(CodeInvalidConfig, "invalid network configuration: %s %s", key, why)
}
