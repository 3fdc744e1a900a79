package relay

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// Encoder gives the bytes the relay serves downstream for a decoded
// resource: the serialized message of the resource's type. The relay
// encodes each version of a resource once, however many clients it is
// sent to.
type Encoder interface {
	Encode(typeURL string, r registry.Resource) ([]byte, error)
}

// EncoderFunc adapts a function to an Encoder.
type EncoderFunc func(typeURL string, r registry.Resource) ([]byte, error)

// Encode calls f.
func (f EncoderFunc) Encode(typeURL string, r registry.Resource) ([]byte, error) {
	return f(typeURL, r)
}

// RawResource is a decoded resource that keeps the bytes it was decoded
// from, such as those of package types/passthrough: the relay serves the
// bytes unchanged, so what a client receives is what the upstream server
// sent.
type RawResource interface {
	// Raw returns the serialized message; the relay does not modify it.
	Raw() []byte
}

// ProtoResource is a decoded resource that gives its message, as the
// built-in types (types/lds, rds, cds, eds, leds) do: the relay serves the
// message's deterministic serialization.
type ProtoResource interface {
	// Proto returns the resource's message, which the relay does not keep.
	Proto() proto.Message
}

// DefaultEncoder serves a [RawResource] as its bytes, a [ProtoResource] or
// a proto.Message as its deterministic serialization, and refuses any
// other resource with an error: the relay then serves no version of it
// and counts it (see the package doc).
func DefaultEncoder() Encoder { return EncoderFunc(defaultEncode) }

func defaultEncode(typeURL string, r registry.Resource) ([]byte, error) {
	switch v := r.(type) {
	case RawResource:
		return v.Raw(), nil
	case ProtoResource:
		return marshal(v.Proto())
	case proto.Message:
		return marshal(v)
	}
	return nil, fmt.Errorf("relay: a %T (resource type %s) has no Raw or Proto method to serve it with; set Config.Encoder", r, typeURL)
}

func marshal(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}
