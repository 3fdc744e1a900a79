package lds_test

import (
	"fmt"
	"testing"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
)

// FuzzDecode checks that decoding never panics and that the same bytes
// always give the same name, error and dependencies. The decoder is
// called directly because Type.Decode would turn a panic into an error.
func FuzzDecode(f *testing.F) {
	for _, c := range allCases() {
		f.Add(marshal(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		first := decodeOnce(raw)
		if second := decodeOnce(raw); first != second {
			t.Fatalf("decoding is not deterministic:\n%s\nthen\n%s", first, second)
		}
	})
}

// decodeOnce summarizes one decoding as a string, so two can be compared.
func decodeOnce(raw []byte) string {
	res, err := lds.Type.Decoder.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		return fmt.Sprintf("name=%q decode error=%v", res.Name, err)
	}
	if res.Resource == nil {
		panic("decoder returned neither a resource nor an error")
	}
	err = lds.Type.Validator.Validate(res.Resource, registry.DecodeOptions{})
	return fmt.Sprintf("name=%q validate error=%v deps=%v", res.Name, err, lds.Type.Refs(res.Resource))
}
