package testtype

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/registry"
)

// Type URLs of the two flavours: Listener-like (all resources required in
// SotW) and endpoint-like.
const (
	TypeURL         = "type.googleapis.com/xdsengine.test.Thing"
	RequiredTypeURL = "type.googleapis.com/xdsengine.test.RequiredThing"
)

// Resource is the decoded form.
type Resource struct {
	Name   string
	Fields map[string]any
	raw    []byte
}

// Equal compares serialized forms.
func (r *Resource) Equal(other registry.Resource) bool {
	o, ok := other.(*Resource)
	return ok && bytes.Equal(r.raw, o.raw)
}

// Type returns a descriptor for typeURL; allRequired sets
// AllResourcesRequiredInSotW.
func Type(typeURL string, allRequired bool) registry.ResourceType {
	return registry.ResourceType{
		TypeURL:                    typeURL,
		Name:                       typeURL[strings.LastIndexByte(typeURL, '.')+1:],
		AllResourcesRequiredInSotW: allRequired,
		Decoder:                    registry.DecoderFunc(decode),
		Validator:                  registry.ValidatorFunc(validate),
		Dependencies:               registry.DependencyFunc(deps),
	}
}

// Registry returns a registry with both flavours.
func Registry() *registry.Registry {
	return registry.MustNew(Type(TypeURL, false), Type(RequiredTypeURL, true))
}

func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	var s structpb.Struct
	if err := proto.Unmarshal(raw, &s); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("unmarshal: %w", err)
	}
	name := s.GetFields()["name"].GetStringValue()
	if name == "" {
		name = opts.WrapperName
	}
	if name == "" {
		return registry.DecodeResult{}, errors.New("no name")
	}
	return registry.DecodeResult{Name: name, Resource: &Resource{Name: name, Fields: s.AsMap(), raw: raw}}, nil
}

func validate(r registry.Resource, _ registry.DecodeOptions) error {
	if msg, ok := r.(*Resource).Fields["invalid"]; ok {
		return fmt.Errorf("invalid: %v", msg)
	}
	return nil
}

func deps(r registry.Resource) []registry.Ref {
	list, _ := r.(*Resource).Fields["deps"].([]any)
	var out []registry.Ref
	for _, d := range list {
		s, _ := d.(string)
		if u, n, ok := strings.Cut(s, "|"); ok {
			out = append(out, registry.Ref{TypeURL: u, Name: n})
		}
	}
	return out
}

// Message builds the Struct for a resource; kv are alternating field names
// and values (string, bool, float64, []any).
func Message(name string, kv ...any) *structpb.Struct {
	m := map[string]any{}
	if name != "" {
		m["name"] = name
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

// Any wraps a resource for typeURL into an Any.
func Any(typeURL, name string, kv ...any) *anypb.Any {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(Message(name, kv...))
	if err != nil {
		panic(err)
	}
	return &anypb.Any{TypeUrl: typeURL, Value: b}
}
