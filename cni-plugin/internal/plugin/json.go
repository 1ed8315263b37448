// JSON as the plugin reads and writes it: objects whose keys keep their
// order on output (as the spec's examples show them), and the few lookups
// into decoded, untyped JSON (map[string]interface{}, []interface{},
// float64, string, bool, nil) that reading the node API's answers needs.
package plugin

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// kv is one key and value of an Object.
type kv struct {
	Key   string
	Value interface{}
}

// object is a JSON object written with its keys in this order.
type object []kv

// MarshalJSON writes the object's keys in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(kv.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(kv.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// get is the value of a key, and whether the object has it.
func (o object) get(key string) (interface{}, bool) {
	for _, kv := range o {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// marshal is encoding/json without HTML escaping (as JSON.stringify writes).
func marshal(v interface{}) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonText is a value as JSON text for a message ("undefined" when absent).
func jsonText(v interface{}, present bool) string {
	if !present {
		return "undefined"
	}
	b, err := marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// decode parses JSON text into untyped values; numbers are float64.
func decode(data []byte) (interface{}, error) {
	var v interface{}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// field is a key's value in v when v is an object (nil otherwise), and whether it is there.
func field(v interface{}, key string) (interface{}, bool) {
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, false
	}
	x, ok := m[key]
	return x, ok
}

// path follows keys through nested objects; nil when any is missing.
func path(v interface{}, keys ...string) interface{} {
	for _, k := range keys {
		v, _ = field(v, k)
	}
	return v
}

// isNumber says whether v is the JSON number n.
func isNumber(v interface{}, n float64) bool {
	f, ok := v.(float64)
	return ok && f == n
}

// text is a value as a message shows it (a string as it is, a number as JSON writes it).
func text(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []interface{}:
		parts := make([]string, len(x))
		for i, e := range x {
			if e != nil {
				parts[i] = text(e)
			}
		}
		return strings.Join(parts, ",")
	default:
		return "[object Object]"
	}
}
