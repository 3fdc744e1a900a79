package registrytest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// Case is one input the type must handle.
type Case struct {
	// Name names the subtest.
	Name string
	// Message is the resource to serialize; Raw is used instead when set.
	Message proto.Message
	Raw     []byte
	// Options are passed to the decoder and validator.
	Options registry.DecodeOptions
	// WantName is the name the decoder must report, valid or not.
	WantName string
	// WantErr, when set, says decoding or validation must fail with an
	// error whose text contains each of its "|"-separated parts. Empty
	// means the resource must be valid.
	WantErr string
	// WantDeps, when non-nil, are the dependencies a valid resource must
	// report, in any order.
	WantDeps []registry.Ref
}

// Run runs the conformance checks for rt over cases. It needs at least one
// valid case to check dependencies and equality.
func Run(t *testing.T, rt registry.ResourceType, cases []Case) {
	t.Helper()
	if _, err := registry.New(rt); err != nil {
		t.Fatalf("registry.New(%s) = %v, want a valid descriptor", rt.TypeURL, err)
	}
	var corpus [][]byte
	for _, c := range cases {
		raw := c.Raw
		if raw == nil && c.Message != nil {
			var err error
			raw, err = proto.MarshalOptions{Deterministic: true}.Marshal(c.Message)
			if err != nil {
				t.Fatalf("case %q: marshal: %v", c.Name, err)
			}
		}
		corpus = append(corpus, raw)
		t.Run(c.Name, func(t *testing.T) { runCase(t, rt, c, raw) })
	}
	t.Run("garbage", func(t *testing.T) {
		for _, p := range CheckGarbage(rt, corpus) {
			t.Error(p)
		}
	})
}

func runCase(t *testing.T, rt registry.ResourceType, c Case, raw []byte) {
	res, err := rt.Decode(raw, c.Options)
	if res.Name != c.WantName {
		t.Errorf("Decode name = %q, want %q (the name must be reported even when validation fails; err = %v)", res.Name, c.WantName, err)
	}
	if rt.NameField != 0 && c.Options.WrapperName == "" && res.Name != "" {
		if name, ok := rt.ReadName(raw); !ok || string(name) != res.Name {
			t.Errorf("ReadName = (%q, %v), want the decoded name %q: NameField %d does not hold it", name, ok, res.Name, rt.NameField)
		}
	}
	if c.WantErr != "" {
		if err == nil {
			t.Fatalf("Decode = valid resource, want error containing %q", c.WantErr)
		}
		for _, part := range strings.Split(c.WantErr, "|") {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("Decode error = %q, want it to contain %q", err, part)
			}
		}
		if res.Resource != nil {
			t.Errorf("Decode returned a resource with error %v", err)
		}
	} else if err != nil {
		t.Fatalf("Decode error = %v, want a valid resource", err)
	}

	res2, err2 := rt.Decode(raw, c.Options)
	if res2.Name != res.Name || errString(err2) != errString(err) {
		t.Errorf("Decode is not deterministic: (%q, %v) then (%q, %v)", res.Name, err, res2.Name, err2)
	}
	if err != nil {
		return
	}
	if eq, ok := res.Resource.(registry.Equaler); ok {
		if !eq.Equal(res.Resource) {
			t.Errorf("Equal is not reflexive for %q", c.Name)
		}
		if !eq.Equal(res2.Resource) {
			t.Errorf("two decodings of the same bytes are not Equal for %q", c.Name)
		}
	}
	deps := rt.Refs(res.Resource)
	for _, d := range deps {
		if d.TypeURL == "" || d.Name == "" {
			t.Errorf("Dependencies returned a malformed ref %+v", d)
		}
	}
	if !reflect.DeepEqual(sortedRefs(deps), sortedRefs(rt.Refs(res2.Resource))) {
		t.Errorf("Dependencies are not deterministic: %v vs %v", deps, rt.Refs(res2.Resource))
	}
	if c.WantDeps != nil && !reflect.DeepEqual(sortedRefs(deps), sortedRefs(c.WantDeps)) {
		t.Errorf("Dependencies = %v, want %v", sortedRefs(deps), sortedRefs(c.WantDeps))
	}
}

// CheckGarbage feeds the decoder bytes no server should send — nil,
// truncations and bit flips of each corpus entry, and random bytes — and
// returns a description of each misbehaviour: a panic, neither a
// resource nor an error, or a resource whose name is not what the type's
// NameField holds. The decoder is called directly, not through
// ResourceType.Decode, which would turn a panic into an error.
func CheckGarbage(rt registry.ResourceType, corpus [][]byte) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := [][]byte{nil, {}, {0xff}, {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}}
	for _, raw := range corpus {
		for cut := 0; cut < len(raw); cut += 1 + len(raw)/16 {
			inputs = append(inputs, raw[:cut])
		}
		for i := 0; i < 16 && len(raw) > 0; i++ {
			flipped := slices.Clone(raw)
			flipped[rng.IntN(len(flipped))] ^= byte(1 << rng.IntN(8))
			inputs = append(inputs, flipped)
		}
	}
	for i := 0; i < 64; i++ {
		b := make([]byte, rng.IntN(64))
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		inputs = append(inputs, b)
	}
	var problems []string
	for _, in := range inputs {
		func() {
			defer func() {
				if p := recover(); p != nil {
					problems = append(problems, fmt.Sprintf("decoder panicked on %x: %v", in, p))
				}
			}()
			res, err := rt.Decoder.Decode(in, registry.DecodeOptions{})
			if err == nil && res.Resource == nil {
				problems = append(problems, fmt.Sprintf("decoder returned neither a resource nor an error for %x", in))
			}
			if name, ok := rt.ReadName(in); ok && err == nil && string(name) != res.Name {
				problems = append(problems, fmt.Sprintf("NameField %d reads %q from %x, the decoder %q", rt.NameField, name, in, res.Name))
			}
			if err == nil && rt.Validator != nil {
				_ = rt.Validator.Validate(res.Resource, registry.DecodeOptions{})
			}
		}()
	}
	return problems
}

// DecodeTwice is the core of a fuzz target: it decodes raw twice with the
// type's decoder alone, so that a panic fails the fuzzer instead of
// becoming an error, validates valid results, and returns the first
// result with its error and, when the two runs disagree on the name, the
// error or the dependencies, a description of how ("" when they agree).
// A type's FuzzDecode calls it and then checks invariants of its own on
// the result.
func DecodeTwice(rt registry.ResourceType, raw []byte, opts registry.DecodeOptions) (res registry.DecodeResult, problem string, err error) {
	once := func() (registry.DecodeResult, string, error) {
		res, err := rt.Decoder.Decode(raw, opts)
		if err != nil {
			return res, fmt.Sprintf("name=%q decode error=%v", res.Name, err), err
		}
		if res.Resource == nil {
			return res, "decoder returned neither a resource nor an error", nil
		}
		if rt.Validator != nil {
			err = rt.Validator.Validate(res.Resource, opts)
		}
		return res, fmt.Sprintf("name=%q validate error=%v deps=%v", res.Name, err, sortedRefs(rt.Refs(res.Resource))), err
	}
	res, first, err := once()
	_, second, _ := once()
	if res.Resource == nil && err == nil {
		return res, first, nil
	}
	if first != second {
		return res, fmt.Sprintf("decoding is not deterministic:\n%s\nthen\n%s", first, second), err
	}
	return res, "", err
}

func sortedRefs(refs []registry.Ref) []registry.Ref {
	out := slices.Clone(refs)
	slices.SortFunc(out, func(a, b registry.Ref) int { return strings.Compare(a.String(), b.String()) })
	if out == nil {
		out = []registry.Ref{}
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprint(err)
}
