package testtype_test

import (
	"fmt"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

// Example decodes a resource written as key-value pairs, and one that
// asks to be invalid.
func Example() {
	typ, _ := testtype.Registry().Lookup(testtype.TypeURL)
	for _, a := range []*anypb.Any{
		testtype.Any(testtype.TypeURL, "a", "v", "1", "deps", []any{testtype.RequiredTypeURL + "|l"}),
		testtype.Any(testtype.TypeURL, "b", "invalid", "port 0 out of range"),
	} {
		res, err := typ.Decode(a.GetValue(), registry.DecodeOptions{})
		if err != nil {
			fmt.Println(res.Name, "invalid:", err)
			continue
		}
		r := res.Resource.(*testtype.Resource)
		fmt.Println(r.Name, r.Fields["v"], typ.Refs(r))
	}
	// Output:
	// a 1 [type.googleapis.com/xdsengine.test.RequiredThing/l]
	// b invalid: invalid: port 0 out of range
}
