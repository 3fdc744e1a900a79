package registrytest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheckGarbageCatchesMisbehaviour(t *testing.T) {
	corpus := [][]byte{testtype.Any(testtype.TypeURL, "a").GetValue()}
	tests := []struct {
		name      string
		decoder   registry.DecoderFunc
		nameField int32
		want      string // in the first problem; "" means no problem
	}{
		{"well behaved", testtype.Type(testtype.TypeURL, false).Decoder.(registry.DecoderFunc), 0, ""},
		{"panics on short input", func(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
			_ = raw[3]
			return registry.DecodeResult{Name: "x", Resource: 1}, nil
		}, 0, "decoder panicked"},
		{"returns nothing", func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{}, nil
		}, 0, "neither a resource nor an error"},
		{"errors are fine", func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{}, errors.New("bad bytes")
		}, 0, ""},
		// The test type's message is a Struct: its field 1 holds the
		// entries of the map that has the name, not the name.
		{"a NameField that is not the name", testtype.Type(testtype.TypeURL, false).Decoder.(registry.DecoderFunc), 1, "NameField 1 reads"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := registry.ResourceType{TypeURL: testtype.TypeURL, Decoder: tc.decoder, NameField: tc.nameField}
			problems := registrytest.CheckGarbage(rt, corpus)
			if tc.want == "" {
				if len(problems) > 0 {
					t.Fatalf("CheckGarbage = %v, want none", problems[0])
				}
				return
			}
			if len(problems) == 0 || !strings.Contains(problems[0], tc.want) {
				t.Fatalf("CheckGarbage = %v, want a problem containing %q", problems, tc.want)
			}
		})
	}
}

// ExampleCheckGarbage runs the kit's robustness check alone; a type's
// tests call registrytest.Run(t, mytype.Type, cases), which includes it.
func ExampleCheckGarbage() {
	broken := registry.ResourceType{
		TypeURL: "type.googleapis.com/example.v1.Broken",
		Decoder: registry.DecoderFunc(func(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{Name: string(raw[:2]), Resource: raw}, nil // panics on short input
		}),
	}
	problems := registrytest.CheckGarbage(broken, nil)
	fmt.Println(len(problems) > 0, problems[0])
	// Output: true decoder panicked on : runtime error: slice bounds out of range [:2] with capacity 0
}

func TestDecodeTwice(t *testing.T) {
	var n int
	flaky := registry.ResourceType{TypeURL: testtype.TypeURL, Decoder: registry.DecoderFunc(func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
		n++
		return registry.DecodeResult{Name: fmt.Sprint(n), Resource: n}, nil
	})}
	good := testtype.Type(testtype.TypeURL, false)
	tests := []struct {
		name    string
		rt      registry.ResourceType
		raw     []byte
		want    string // in the problem; "" means none
		wantErr bool
	}{
		{"deterministic", good, testtype.Any(testtype.TypeURL, "a").GetValue(), "", false},
		{"invalid but deterministic", good, testtype.Any(testtype.TypeURL, "a", "invalid", "x").GetValue(), "", true},
		{"not deterministic", flaky, nil, "not deterministic", false},
	}
	for _, tc := range tests {
		res, problem, err := registrytest.DecodeTwice(tc.rt, tc.raw, registry.DecodeOptions{})
		if (tc.want == "") != (problem == "") || !strings.Contains(problem, tc.want) || (err != nil) != tc.wantErr {
			t.Errorf("%s: DecodeTwice = %v, %q, %v", tc.name, res, problem, err)
		}
	}
}
