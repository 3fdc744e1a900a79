package wire

import (
	"errors"
	"slices"
	"unicode/utf8"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// envelope is a DiscoveryResponse read without copying its resources:
// each resource's type URL and value alias the response's bytes, which
// nothing reuses. proto.Unmarshal would allocate an Any and copy its
// value for every resource, and most of a large SotW response is
// resources that did not change, whose bytes are only compared.
type envelope struct {
	version, typeURL, nonce string
	resources               []rawAny
	errors                  []*discoverypb.ResourceError
}

// rawAny is a google.protobuf.Any as two slices of the response.
type rawAny struct {
	typeURL, value []byte
}

// errEnvelope says that parseEnvelope refused b; proto.Unmarshal then
// gives the reason, in its own words.
var errEnvelope = errors.New("not a DiscoveryResponse")

// parseEnvelope reads a DiscoveryResponse. It accepts exactly what
// proto.Unmarshal accepts, with the same result (FuzzEnvelope checks
// both): strings must be valid UTF-8, a known field of another wire type
// is an unknown field, the last of repeated scalars wins, and the two
// small messages (control_plane, resource_errors) are read by
// proto.Unmarshal itself.
//
// The resources are appended to dst[:0], whose array is reused when it is
// large enough.
func parseEnvelope(b []byte, dst []rawAny) (envelope, error) {
	e := envelope{resources: dst[:0]}
	if cap(dst) == 0 {
		// A first response: sized once. A stream's next ones reuse the
		// array, which append grows if need be.
		e.resources = slices.Grow(e.resources, countResources(b))
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return e, errEnvelope
		}
		b = b[n:]
		if typ != protowire.BytesType || num < 1 || num > 7 || num == 3 {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return e, errEnvelope
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return e, errEnvelope
		}
		b = b[n:]
		var err error
		switch num {
		case 1:
			e.version, err = utf8String(v)
		case 2:
			var a rawAny
			if a, err = parseAny(v); err == nil {
				e.resources = append(e.resources, a)
			}
		case 4:
			e.typeURL, err = utf8String(v)
		case 5:
			e.nonce, err = utf8String(v)
		case 6:
			err = proto.Unmarshal(v, &corepb.ControlPlane{})
		case 7:
			re := &discoverypb.ResourceError{}
			if err = proto.Unmarshal(v, re); err == nil {
				e.errors = append(e.errors, re)
			}
		}
		if err != nil {
			return e, errEnvelope
		}
	}
	return e, nil
}

// countResources counts the resources field of a DiscoveryResponse, so
// that they are collected into one allocation. It stops, uncounted, at
// what it cannot read: parseEnvelope then says why.
func countResources(b []byte) int {
	n := 0
	for len(b) > 0 {
		num, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			return n
		}
		b = b[m:]
		if m = protowire.ConsumeFieldValue(num, typ, b); m < 0 {
			return n
		}
		b = b[m:]
		if num == 2 && typ == protowire.BytesType {
			n++
		}
	}
	return n
}

// parseAny reads a google.protobuf.Any (type_url = 1, value = 2).
func parseAny(b []byte) (rawAny, error) {
	var a rawAny
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return a, errEnvelope
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return a, errEnvelope
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return a, errEnvelope
		}
		b = b[n:]
		if num == 1 {
			if !utf8.Valid(v) {
				return a, errEnvelope
			}
			a.typeURL = v
		} else {
			a.value = v
		}
	}
	return a, nil
}

func utf8String(v []byte) (string, error) {
	if !utf8.Valid(v) {
		return "", errEnvelope
	}
	return string(v), nil
}

// envelopeOf is the envelope of a response proto.Unmarshal read: the slow
// path, taken only when parseEnvelope refused the bytes and proto did not.
func envelopeOf(resp *discoverypb.DiscoveryResponse) envelope {
	e := envelope{version: resp.GetVersionInfo(), typeURL: resp.GetTypeUrl(), nonce: resp.GetNonce(), errors: resp.GetResourceErrors()}
	for _, a := range resp.GetResources() {
		e.resources = append(e.resources, rawAny{typeURL: []byte(a.GetTypeUrl()), value: a.GetValue()})
	}
	return e
}
