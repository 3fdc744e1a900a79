package wire

import (
	"unicode/utf8"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// resourceNamesField is DiscoveryRequest.resource_names.
const resourceNamesField protowire.Number = 3

// encodedNames is the resource_names field of a type's last request, as
// written: the names rarely change between requests (an ACK repeats them
// all), and encoding them, with proto's UTF-8 check of each, is most of
// an ACK's cost.
type encodedNames struct {
	names []string // the host's slice, never modified
	field []byte
}

// marshalRequest encodes a request. A SotW request carrying the very
// slice of names of the type's last one reuses their encoding; the
// fields are appended in another order than proto.Marshal's, which the
// wire format allows (the names stay in their order).
func (s *stream) marshalRequest(msg proto.Message) ([]byte, error) {
	req, ok := msg.(*discoverypb.DiscoveryRequest)
	if !ok || len(req.ResourceNames) == 0 {
		return proto.Marshal(msg)
	}
	enc := s.encNames[req.TypeUrl]
	if !sameSlice(enc.names, req.ResourceNames) {
		field, ok := encodeNames(req.ResourceNames)
		if !ok {
			// proto.Marshal says what is wrong.
			return proto.Marshal(msg)
		}
		enc = encodedNames{names: req.ResourceNames, field: field}
		if s.encNames == nil {
			s.encNames = make(map[string]encodedNames)
		}
		s.encNames[req.TypeUrl] = enc
	}
	names := req.ResourceNames
	req.ResourceNames = nil
	opts := proto.MarshalOptions{}
	b, err := opts.MarshalAppend(make([]byte, 0, opts.Size(req)+len(enc.field)), req)
	req.ResourceNames = names
	if err != nil {
		return nil, err
	}
	return append(b, enc.field...), nil
}

// encodeNames encodes names as the resource_names field, or reports
// false if one is not valid UTF-8, which proto.Marshal refuses.
func encodeNames(names []string) ([]byte, bool) {
	size := 0
	for _, name := range names {
		if !utf8.ValidString(name) {
			return nil, false
		}
		size += protowire.SizeTag(resourceNamesField) + protowire.SizeBytes(len(name))
	}
	b := make([]byte, 0, size)
	for _, name := range names {
		b = protowire.AppendTag(b, resourceNamesField, protowire.BytesType)
		b = protowire.AppendString(b, name)
	}
	return b, true
}
