package bootstrap

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// jsonField returns obj[name], treating null like a missing field.
func jsonField(obj map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	v, ok := obj[name]
	if !ok || jsonKind(v) == "null" {
		return nil, false
	}
	return v, true
}

// jsonKind names the kind of a valid JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// jsonCompact returns a copy of valid JSON without insignificant whitespace.
func jsonCompact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		// Unreachable: raw was validated when the whole input was.
		return slices.Clone(raw)
	}
	return b.Bytes()
}

func jsonIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func jsonKey(path, name string) string { return path + "[" + strconv.Quote(name) + "]" }

func jsonSortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
