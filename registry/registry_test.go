package registry_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var okDecoder = registry.DecoderFunc(func(raw []byte, o registry.DecodeOptions) (registry.DecodeResult, error) {
	return registry.DecodeResult{Name: string(raw), Resource: string(raw)}, nil
})

func typ(url string) registry.ResourceType {
	return registry.ResourceType{TypeURL: url, Decoder: okDecoder}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name    string
		types   []registry.ResourceType
		wantErr error
		wantMsg string
	}{
		{"empty type URL", []registry.ResourceType{typ("")}, registry.ErrEmptyTypeURL, "resource type #0: empty type URL"},
		{"no slash", []registry.ResourceType{typ("Listener")}, registry.ErrBadTypeURL, `#0 (Listener)`},
		{"nothing after the slash", []registry.ResourceType{typ("type.googleapis.com/")}, registry.ErrBadTypeURL, "<host>/<message name>"},
		{"whitespace", []registry.ResourceType{typ("type.googleapis.com/a b")}, registry.ErrBadTypeURL, ""},
		{"nil decoder", []registry.ResourceType{{TypeURL: "type.googleapis.com/x.Y"}}, registry.ErrNilDecoder, "(type.googleapis.com/x.Y): nil decoder"},
		{"negative NameField", []registry.ResourceType{{TypeURL: "type.googleapis.com/x.Y", Decoder: okDecoder, NameField: -1}},
			registry.ErrBadNameField, "(type.googleapis.com/x.Y): NameField is not a valid protobuf field number"},
		{"NameField past the largest field number", []registry.ResourceType{{TypeURL: "type.googleapis.com/x.Y", Decoder: okDecoder, NameField: int32(protowire.MaxValidNumber) + 1}},
			registry.ErrBadNameField, ""},
		{"duplicate", []registry.ResourceType{typ("type.googleapis.com/x.Y"), typ("type.googleapis.com/x.Z"), typ("type.googleapis.com/x.Y")},
			registry.ErrDuplicateType, "resource type #2 (type.googleapis.com/x.Y): type URL registered twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := registry.New(tc.types...)
			if r != nil || !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("New = %v, %v; want %v containing %q", r, err, tc.wantErr, tc.wantMsg)
			}
			var te *registry.TypeError
			if !errors.As(err, &te) {
				t.Fatalf("error %T is not a *TypeError", err)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	r, err := registry.New(typ("type.googleapis.com/b.B"), typ("type.googleapis.com/a.A"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.TypeURLs(); !slices.Equal(got, []string{"type.googleapis.com/a.A", "type.googleapis.com/b.B"}) {
		t.Fatalf("TypeURLs = %v, want sorted", got)
	}
	r.TypeURLs()[0] = "changed"
	if r.TypeURLs()[0] != "type.googleapis.com/a.A" {
		t.Fatal("TypeURLs exposes the registry's slice")
	}
	r2, err := r.With(typ("type.googleapis.com/c.C"))
	if err != nil || r2.Len() != 3 || r.Len() != 2 {
		t.Fatalf("With: %v, lens %d %d; want a new registry of 3 and the old one unchanged", err, r2.Len(), r.Len())
	}
	if _, err := r.With(typ("type.googleapis.com/a.A")); !errors.Is(err, registry.ErrDuplicateType) {
		t.Fatalf("With duplicate = %v", err)
	}
	if _, ok := r.Lookup("type.googleapis.com/c.C"); ok {
		t.Fatal("With modified the original registry")
	}
	var nilReg *registry.Registry
	if _, ok := nilReg.Lookup("x"); ok || nilReg.Len() != 0 || nilReg.TypeURLs() != nil {
		t.Fatal("a nil registry must be empty")
	}
}

func TestTypeName(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"type.googleapis.com/envoy.config.cluster.v3.Cluster", "envoy.config.cluster.v3.Cluster"},
		{"example.com/a/b/c.D", "c.D"},
		{"c.D", "c.D"},
		{"", ""},
	} {
		if got := registry.TypeName(tt.url); got != tt.want {
			t.Errorf("TypeName(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestShortName(t *testing.T) {
	tests := []struct {
		rt   registry.ResourceType
		want string
	}{
		{registry.ResourceType{TypeURL: "type.googleapis.com/envoy.config.listener.v3.Listener"}, "Listener"},
		{registry.ResourceType{TypeURL: "type.googleapis.com/envoy.config.listener.v3.Listener", Name: "LDS"}, "LDS"},
		{registry.ResourceType{TypeURL: "example.com/Thing"}, "Thing"},
	}
	for _, tc := range tests {
		if got := tc.rt.ShortName(); got != tc.want {
			t.Errorf("ShortName(%q) = %q, want %q", tc.rt.TypeURL, got, tc.want)
		}
	}
}

// TestRegistryShortName: a registered type's own short name, the type
// URL's otherwise, and a nil registry knows no type.
func TestRegistryShortName(t *testing.T) {
	reg, err := registry.New(
		registry.ResourceType{TypeURL: "example.com/pkg.Named", Name: "N", Decoder: okDecoder},
		registry.ResourceType{TypeURL: "example.com/pkg.Unnamed", Decoder: okDecoder},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reg           *registry.Registry
		typeURL, want string
	}{
		{reg, "example.com/pkg.Named", "N"},
		{reg, "example.com/pkg.Unnamed", "Unnamed"},
		{reg, "type.googleapis.com/envoy.config.listener.v3.Listener", "Listener"},
		{nil, "example.com/pkg.Named", "Named"},
	} {
		if got := tc.reg.ShortName(tc.typeURL); got != tc.want {
			t.Errorf("ShortName(%q) = %q, want %q", tc.typeURL, got, tc.want)
		}
	}
}

// TestDecode covers ResourceType.Decode, the engine's single entry point
// into a type: validation, the wrapper name and panic containment.
func TestDecode(t *testing.T) {
	failing := registry.ValidatorFunc(func(r registry.Resource, _ registry.DecodeOptions) error {
		if r == "bad" {
			return errors.New("port: out of range")
		}
		return nil
	})
	tests := []struct {
		name     string
		rt       registry.ResourceType
		raw      string
		opts     registry.DecodeOptions
		wantName string
		wantErr  string
	}{
		{"valid", registry.ResourceType{TypeURL: "t/x.A", Decoder: okDecoder, Validator: failing}, "ok", registry.DecodeOptions{}, "ok", ""},
		{"invalid keeps the name", registry.ResourceType{TypeURL: "t/x.A", Decoder: okDecoder, Validator: failing}, "bad", registry.DecodeOptions{}, "bad", "port: out of range"},
		{"name from the wrapper", registry.ResourceType{TypeURL: "t/x.A", Decoder: registry.DecoderFunc(func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{Resource: 1}, nil
		})}, "", registry.DecodeOptions{WrapperName: "w"}, "w", ""},
		{"decoder panic becomes an error", registry.ResourceType{TypeURL: "t/x.A", Decoder: registry.DecoderFunc(func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
			panic("boom")
		})}, "", registry.DecodeOptions{WrapperName: "w"}, "w", "A decoder panicked: boom"},
		{"no resource and no error", registry.ResourceType{TypeURL: "t/x.A", Decoder: registry.DecoderFunc(func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{Name: "n"}, nil
		})}, "", registry.DecodeOptions{}, "n", "decoder returned no resource"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.rt.Decode([]byte(tc.raw), tc.opts)
			if res.Name != tc.wantName {
				t.Errorf("name = %q, want %q", res.Name, tc.wantName)
			}
			if tc.wantErr == "" {
				if err != nil || res.Resource == nil {
					t.Errorf("Decode = %v, %v; want a resource", res.Resource, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || res.Resource != nil {
				t.Errorf("Decode = %v, %v; want error %q and no resource", res.Resource, err, tc.wantErr)
			}
		})
	}
}

// TestReadName reads the name field of hand-built messages, as
// proto.Unmarshal would: the last occurrence of the field counts, and
// bytes that do not parse give no name.
func TestReadName(t *testing.T) {
	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	// A group (field 5) holding a field 1 of its own, which is not the name.
	group := cat(protowire.AppendTag(nil, 5, protowire.StartGroupType), str(1, "inner"), protowire.AppendTag(nil, 5, protowire.EndGroupType))
	tests := []struct {
		name      string
		nameField int32
		raw       []byte
		want      string
		wantOK    bool
	}{
		{"first field", 1, cat(str(1, "a"), varint(2, 7)), "a", true},
		{"after other fields", 1, cat(varint(2, 7), str(3, "x"), group, str(1, "a")), "a", true},
		{"another field number", 3, cat(str(1, "a"), str(3, "b")), "b", true},
		{"a group's field 1 is not the name", 1, cat(str(1, "a"), group), "a", true},
		{"twice: the last counts", 1, cat(str(1, "a"), varint(2, 7), str(1, "b")), "b", true},
		{"empty name", 1, str(1, ""), "", true},
		{"absent", 1, cat(varint(2, 7), str(3, "x")), "", false},
		{"not length-delimited", 1, varint(1, 7), "", false},
		{"no NameField", 0, str(1, "a"), "", false},
		{"truncated before the name", 1, cat(varint(2, 7), str(1, "abc")[:3]), "", false},
		{"garbage after the name", 1, cat(str(1, "a"), []byte{0xff}), "", false},
		{"empty", 1, nil, "", false},
		{"a field number past the largest", 1, cat(str(1, "a"), str(protowire.MaxValidNumber+1, "x")), "", false},
		{"the largest field number", int32(protowire.MaxValidNumber), cat(str(1, "a"), str(protowire.MaxValidNumber, "x")), "x", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := registry.ResourceType{TypeURL: "t/x.A", Decoder: okDecoder, NameField: tc.nameField}
			got, ok := rt.ReadName(tc.raw)
			if string(got) != tc.want || ok != tc.wantOK {
				t.Fatalf("ReadName(%x) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestRefs(t *testing.T) {
	rt := registry.ResourceType{TypeURL: "t/x.A", Decoder: okDecoder,
		Dependencies: registry.DependencyFunc(func(r registry.Resource) []registry.Ref {
			return []registry.Ref{{TypeURL: "t/x.B", Name: r.(string)}}
		})}
	if got := rt.Refs("b"); len(got) != 1 || got[0].String() != "t/x.B/b" {
		t.Fatalf("Refs = %v", got)
	}
	if got := (registry.ResourceType{TypeURL: "t/x.A", Decoder: okDecoder}).Refs("b"); got != nil {
		t.Fatalf("Refs without an extractor = %v, want nil", got)
	}
}

// Example_customResourceType registers a type of one's own next to others.
func Example_customResourceType() {
	greeting := registry.ResourceType{
		TypeURL: "type.googleapis.com/example.v1.Greeting",
		Decoder: registry.DecoderFunc(func(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
			name, text, ok := strings.Cut(string(raw), "=")
			if !ok {
				return registry.DecodeResult{}, errors.New("want name=text")
			}
			return registry.DecodeResult{Name: name, Resource: text}, nil
		}),
		Validator: registry.ValidatorFunc(func(r registry.Resource, _ registry.DecodeOptions) error {
			if r.(string) == "" {
				return errors.New("text: must not be empty")
			}
			return nil
		}),
	}
	reg, err := registry.New(greeting)
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := reg.Lookup("type.googleapis.com/example.v1.Greeting")
	res, err := rt.Decode([]byte("hello=Hello, xDS"), registry.DecodeOptions{})
	fmt.Println(rt.ShortName(), res.Name, res.Resource, err)
	res, err = rt.Decode([]byte("empty="), registry.DecodeOptions{})
	fmt.Println(res.Name, err)
	// Output:
	// Greeting hello Hello, xDS <nil>
	// empty text: must not be empty
}

func ExampleRegistry_With() {
	base := registry.MustNew(registry.ResourceType{TypeURL: "type.googleapis.com/a.A", Decoder: okDecoder})
	_, err := base.With(registry.ResourceType{TypeURL: "type.googleapis.com/a.A", Decoder: okDecoder})
	fmt.Println(err)
	// Output: registry: resource type #1 (type.googleapis.com/a.A): type URL registered twice
}

// ExampleTypeName: Any takes what comes before a type URL's last '/' for
// a host, so two type URLs name the same message when their names match.
func ExampleTypeName() {
	fmt.Println(registry.TypeName("type.googleapis.com/envoy.config.cluster.v3.Cluster"))
	fmt.Println(registry.TypeName("example.com/types/envoy.config.cluster.v3.Cluster"))
	// Output:
	// envoy.config.cluster.v3.Cluster
	// envoy.config.cluster.v3.Cluster
}

// ExampleRegistry_ShortName: a type URL as a program shows it, by the
// registered type's own short name when it has one.
func ExampleRegistry_ShortName() {
	reg, err := registry.New(registry.ResourceType{TypeURL: "type.googleapis.com/example.v1.Policy", Name: "Policy (v1)", Decoder: okDecoder})
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.ShortName("type.googleapis.com/example.v1.Policy"))
	fmt.Println(reg.ShortName("type.googleapis.com/envoy.config.listener.v3.Listener"))
	// Output:
	// Policy (v1)
	// Listener
}

// ExampleResourceType_EnabledUnder: a type can depend on one of gRPC's
// environment guards; the engine then treats it as absent when the guard
// is off, and advertises none of its client features.
func ExampleResourceType_EnabledUnder() {
	t := registry.ResourceType{
		TypeURL: "type.googleapis.com/example.v1.Experimental",
		Decoder: registry.DecoderFunc(func([]byte, registry.DecodeOptions) (registry.DecodeResult, error) {
			return registry.DecodeResult{}, nil
		}),
		ClientFeatures: []string{"example.experimental"},
		Enabled:        func(sw features.Switches) bool { return !sw.DisableEndpointFallback },
	}
	fmt.Println(t.EnabledUnder(features.Switches{}), t.EnabledUnder(features.Switches{DisableEndpointFallback: true}))
	// Output: true false
}

// ExampleDecodeOptions_KeepRaw: a decoder that keeps the bytes it was
// given copies them only when its caller may reuse them. The engine hands
// each resource over (OwnsRaw), so the copy is made once, by the engine.
// A type whose message names itself in a field says which: the engine
// then recognizes a re-sent resource by that name and its bytes, without
// decoding it or keeping an index of every cached resource's bytes.
func ExampleResourceType_ReadName() {
	rt := registry.ResourceType{TypeURL: "type.googleapis.com/example.v1.Policy", Decoder: okDecoder, NameField: 1}
	raw := protowire.AppendTag(nil, 2, protowire.VarintType) // limit = 100
	raw = protowire.AppendVarint(raw, 100)
	raw = protowire.AppendTag(raw, 1, protowire.BytesType) // name = "policy-a"
	raw = protowire.AppendString(raw, "policy-a")
	name, ok := rt.ReadName(raw)
	fmt.Println(string(name), ok)
	// Output: policy-a true
}

func ExampleDecodeOptions_KeepRaw() {
	raw := []byte("bytes from the wire")
	kept := registry.DecodeOptions{}.KeepRaw(raw)
	handedOver := registry.DecodeOptions{OwnsRaw: true}.KeepRaw(raw)
	raw[0] = 'B' // the caller reuses its buffer
	fmt.Println(string(kept))
	fmt.Println(string(handedOver))
	// Output:
	// bytes from the wire
	// Bytes from the wire
}
