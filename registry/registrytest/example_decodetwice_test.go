package registrytest_test

import (
	"fmt"
	"log"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
)

// ExampleDecodeTwice runs the core of a type's fuzz target over a few
// inputs, as "go test" runs a fuzz target over its seed corpus. The
// target is
//
//	func FuzzDecode(f *testing.F) {
//		f.Add(seed) // ...
//		f.Fuzz(func(t *testing.T, raw []byte) {
//			res, problem, err := registrytest.DecodeTwice(greetingType, raw, registry.DecodeOptions{})
//			if problem != "" {
//				t.Fatal(problem)
//			}
//			// ... the type's own checks of res when err is nil ...
//		})
//	}
//
// A valid, an invalid and an unreadable input are fine with the greeting
// type. A copy of it whose decoder keeps a scratch slice from one call to
// the next, a bug that makes the second decoding of the same bytes name
// another dependency, is caught.
func ExampleDecodeTwice() {
	valid := marshal(greetingMessage("hello", "Hello!", "hi"))
	for _, seed := range []struct {
		name string
		raw  []byte
	}{
		{"valid", valid},
		{"invalid", marshal(greetingMessage("silent", "", ""))},
		{"unreadable", []byte{0xff}},
	} {
		res, problem, err := registrytest.DecodeTwice(greetingType, seed.raw, registry.DecodeOptions{})
		fmt.Printf("%s: name %q, error %v, problem %q\n", seed.name, res.Name, err != nil, problem)
	}

	var scratch []string // kept from one call to the next: the bug
	buggy := greetingType
	buggy.Decoder = registry.DecoderFunc(func(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
		res, err := decodeGreeting(raw, opts)
		if g, ok := res.Resource.(*greeting); ok && g.ReplyTo != "" {
			scratch = append(scratch, g.ReplyTo)
			g.ReplyTo = strings.Join(scratch, ",")
		}
		return res, err
	})
	_, problem, _ := registrytest.DecodeTwice(buggy, valid, registry.DecodeOptions{})
	fmt.Println(problem)
	// Output:
	// valid: name "hello", error false, problem ""
	// invalid: name "silent", error true, problem ""
	// unreadable: name "", error true, problem ""
	// decoding is not deterministic:
	// name="hello" validate error=<nil> deps=[type.googleapis.com/example.greeter.v1.Greeting/hi]
	// then
	// name="hello" validate error=<nil> deps=[type.googleapis.com/example.greeter.v1.Greeting/hi,hi]
}

func marshal(m proto.Message) []byte {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		log.Fatal(err)
	}
	return raw
}
