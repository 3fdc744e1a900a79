package lds_test

import (
	"testing"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/lds"
)

// FuzzDecode checks that decoding never panics and that the same bytes
// always give the same name, error and dependencies.
func FuzzDecode(f *testing.F) {
	for _, c := range allCases() {
		f.Add(marshal(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, problem, _ := registrytest.DecodeTwice(lds.Type, raw, registry.DecodeOptions{}); problem != "" {
			t.Fatal(problem)
		}
	})
}
