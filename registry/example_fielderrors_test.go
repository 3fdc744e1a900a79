package registry_test

import (
	"errors"
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
)

// ExampleFieldErrors collects every problem of a resource for one NACK,
// in the format the built-in types use.
func ExampleFieldErrors() {
	var errs registry.FieldErrors
	errs.Add("cluster", "must be non-empty")
	errs.Addf("requests_per_unit", "must be at least 1, got %d", 0)
	// A nested message's errors, under its field.
	var inner registry.FieldErrors
	inner.Add("port", "must be at most 65535")
	errs.AddWithin("endpoints[2]", inner.Err())
	errs.AddWithin("metadata", errors.New("not a map"))
	fmt.Println(errs.Len())
	fmt.Println(errs.Err())
	// Output:
	// 4
	// cluster: must be non-empty; requests_per_unit: must be at least 1, got 0; endpoints[2].port: must be at most 65535; metadata: not a map
}
