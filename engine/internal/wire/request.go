package wire

import (
	"net"
	"unicode/utf8"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// resourceNamesField is DiscoveryRequest.resource_names.
const resourceNamesField protoscan.Number = 3

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
// wire format allows (the names stay in their order). To a stream that
// takes buffers (s.buffers) the names go as a buffer of their own: the
// encoding, shared by the type's requests until the names change, and
// never modified. Otherwise names is nil and head the whole request.
func (s *stream) marshalRequest(msg proto.Message) (head, names []byte, err error) {
	req, ok := msg.(*discoverypb.DiscoveryRequest)
	if !ok || len(req.ResourceNames) == 0 {
		head, err = proto.Marshal(msg)
		return head, nil, err
	}
	enc := s.encNames[req.TypeUrl]
	if !sameSlice(enc.names, req.ResourceNames) {
		field, ok := encodeNames(req.ResourceNames)
		if !ok {
			// proto.Marshal says what is wrong.
			head, err = proto.Marshal(msg)
			return head, nil, err
		}
		enc = encodedNames{names: req.ResourceNames, field: field}
		if s.encNames == nil {
			s.encNames = make(map[string]encodedNames)
		}
		s.encNames[req.TypeUrl] = enc
	}
	list := req.ResourceNames
	req.ResourceNames = nil
	opts := proto.MarshalOptions{}
	size := opts.Size(req)
	if s.buffers == nil {
		size += len(enc.field)
	}
	head, err = opts.MarshalAppend(make([]byte, 0, size), req)
	req.ResourceNames = list
	switch {
	case err != nil:
		return nil, nil, err
	case s.buffers != nil:
		return head, enc.field, nil
	}
	return append(head, enc.field...), nil, nil
}

// send writes a request marshalRequest encoded.
func (s *stream) send(head, names []byte) error {
	if names == nil {
		return s.raw.Send(head)
	}
	return s.buffers.SendBuffers(net.Buffers{head, names})
}

// encodeNames encodes names as the resource_names field, or reports
// false if one is not valid UTF-8, which proto.Marshal refuses.
func encodeNames(names []string) ([]byte, bool) {
	size := 0
	for _, name := range names {
		if !utf8.ValidString(name) {
			return nil, false
		}
		size += protoscan.SizeTag(resourceNamesField) + protoscan.SizeBytes(len(name))
	}
	b := make([]byte, 0, size)
	for _, name := range names {
		b = protoscan.AppendStringField(b, resourceNamesField, name)
	}
	return b, true
}
