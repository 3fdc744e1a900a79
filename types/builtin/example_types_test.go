package builtin_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
)

// ExampleTypes builds a registry of the built-in types and one of the
// program's own, for an engine that watches both.
func ExampleTypes() {
	greeting := registry.ResourceType{
		TypeURL: "type.googleapis.com/example.v1.Greeting",
		Decoder: registry.DecoderFunc(func(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{Name: "hello", Resource: string(raw)}, nil
		}),
	}
	reg, err := registry.New(append(builtin.Types(), greeting)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(reg.TypeURLs()), "types")
	_, ok := reg.Lookup("type.googleapis.com/example.v1.Greeting")
	fmt.Println("greeting registered:", ok)

	// A type URL already taken by a built-in type is refused.
	_, err = registry.New(append(builtin.Types(), registry.ResourceType{
		TypeURL: builtin.Types()[0].TypeURL, Decoder: greeting.Decoder})...)
	fmt.Println(err)
	// Output:
	// 7 types
	// greeting registered: true
	// registry: resource type #6 (type.googleapis.com/envoy.config.listener.v3.Listener): type URL registered twice
}
