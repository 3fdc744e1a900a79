package testtype

import (
	"testing"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
)

func TestConformance(t *testing.T) {
	registrytest.Run(t, Type(TypeURL, false), []registrytest.Case{
		{Name: "valid", Message: Message("a"), WantName: "a", WantDeps: []registry.Ref{}},
		{Name: "deps", Message: Message("b", "deps", []any{TypeURL + "|c"}), WantName: "b",
			WantDeps: []registry.Ref{{TypeURL: TypeURL, Name: "c"}}},
		{Name: "invalid", Message: Message("d", "invalid", "bad port"), WantName: "d", WantErr: "bad port"},
		{Name: "name from wrapper", Message: Message(""), Options: registry.DecodeOptions{WrapperName: "w"}, WantName: "w"},
	})
}
