package passthrough

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdsengine/xdsengine/registry"
)

// decoder is the Decoder of one pass-through type.
type decoder struct {
	url       string
	short     string
	mt        protoreflect.MessageType
	nameField protoreflect.FieldDescriptor // nil: the wrapper names resources
	naming    naming
	refs      func(proto.Message, *reach) []registry.Ref
	refReach  *reach
}

// Decode unmarshals raw into the type's message and names it. It checks
// nothing the bytes do not force: validation is the Validator's.
func (d *decoder) Decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	m := d.mt.New().Interface()
	if err := proto.Unmarshal(raw, m); err != nil {
		return registry.DecodeResult{Name: d.nameOfBytes(raw, opts)}, fmt.Errorf("cannot unmarshal %s: %w", d.short, err)
	}
	name := d.nameOf(m, opts)
	if name == "" {
		return registry.DecodeResult{}, d.unnamed()
	}
	r := &Resource{typeURL: d.url, name: name, msg: m, raw: opts.KeepRaw(raw), dec: d}
	return registry.DecodeResult{Name: name, Resource: r}, nil
}

// refsOf returns what m refers to. Resources compute it on first use:
// only a dependency graph asks, and a relay, which builds none, should not
// unpack the Anys a second time (the validator does once).
func (d *decoder) refsOf(m proto.Message) []registry.Ref {
	if d.refs == nil {
		return nil
	}
	return d.refs(m, d.refReach)
}

// nameOf returns the name of a decoded resource.
func (d *decoder) nameOf(m proto.Message, opts registry.DecodeOptions) string {
	var field string
	if d.nameField != nil {
		field = m.ProtoReflect().Get(d.nameField).String()
	}
	if d.naming == byWrapper && opts.WrapperName != "" || field == "" {
		return opts.WrapperName
	}
	return field
}

// nameOfBytes names a resource whose bytes do not unmarshal, so that the
// NACK can say which one it was: the name field read from the bytes when
// it is there and valid UTF-8, as proto.Unmarshal would have read it.
func (d *decoder) nameOfBytes(raw []byte, opts registry.DecodeOptions) string {
	if d.nameField == nil || d.naming == byWrapper && opts.WrapperName != "" {
		return opts.WrapperName
	}
	rt := registry.ResourceType{NameField: int32(d.nameField.Number())}
	if name, ok := rt.ReadName(raw); ok && len(name) > 0 && utf8.Valid(name) {
		return string(name)
	}
	return opts.WrapperName
}

func (d *decoder) unnamed() error {
	if d.nameField == nil {
		return fmt.Errorf("%s has no name field: it must arrive in a named envoy.service.discovery.v3.Resource wrapper", d.short)
	}
	return &registry.FieldError{Field: string(d.nameField.Name()), Rule: "must be non-empty, or the resource must arrive in a named envoy.service.discovery.v3.Resource wrapper"}
}
