package wire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// rawAny is a google.protobuf.Any as two slices of the response. A
// resource whose type URL has the same bytes as the one before it shares
// that one's slice, so that a check of the type URL made for one holds,
// without a comparison, for every resource after it (see decode).
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
	var typeURL []byte // the last resource's, valid UTF-8
	for len(b) > 0 {
		num, v, rest, err := nextField(b)
		if err != nil {
			return e, errEnvelope
		}
		b = rest
		switch num {
		case 1:
			e.version, err = utf8String(v)
		case 2:
			// Read in place: a rawAny returned and then appended is
			// copied with wide loads of what narrow stores just wrote,
			// which the processor cannot forward; that stall was a third
			// of this loop's time.
			e.resources = append(e.resources, rawAny{})
			a := &e.resources[len(e.resources)-1]
			if err = parseAny(a, v, typeURL); err == nil {
				typeURL = a.typeURL
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

// nextField reads the next field of a DiscoveryResponse: its number and
// value if it is one of the length-delimited fields parseEnvelope reads,
// number 0 for any other, which is skipped. A resource, nearly all of a
// response, is split without protowire's general calls when its length
// allows (lengthDelimited).
func nextField(b []byte) (num protowire.Number, v, rest []byte, err error) {
	if b[0] == resourcesTag {
		if v, rest, ok := lengthDelimited(b[1:]); ok {
			return 2, v, rest, nil
		}
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || !num.IsValid() {
		return 0, nil, nil, errEnvelope
	}
	b = b[n:]
	if typ != protowire.BytesType || num < 1 || num > 7 || num == 3 {
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0, nil, nil, errEnvelope
		}
		return 0, nil, b[n:], nil
	}
	if v, n = protowire.ConsumeBytes(b); n < 0 {
		return 0, nil, nil, errEnvelope
	}
	return num, v, b[n:], nil
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

// The tags of the fields read most: DiscoveryResponse.resources (2) and
// Any's type_url (1) and value (2), all length-delimited.
const (
	resourcesTag = 2<<3 | byte(protowire.BytesType)
	typeURLTag   = 1<<3 | byte(protowire.BytesType)
	valueTag     = 2<<3 | byte(protowire.BytesType)
)

// lengthDelimited splits b after a length prefix of at most two bytes
// (127 bytes; 16 KB), which covers the type URLs and most resources. It
// reports false for anything else, which the caller then reads the
// general way.
func lengthDelimited(b []byte) (v, rest []byte, ok bool) {
	// Written to be inlined (three calls per resource).
	if len(b) == 0 {
		return nil, nil, false
	}
	n, i := int(b[0]), 1
	if n >= 0x80 {
		// A second byte of 0 (a length written longer than needed) is
		// what protowire accepts too.
		if len(b) < 2 || b[1] >= 0x80 {
			return nil, nil, false
		}
		n, i = n&0x7f|int(b[1])<<7, 2
	}
	if n > len(b)-i {
		return nil, nil, false
	}
	return b[i : i+n], b[i+n:], true
}

// parseAny reads a google.protobuf.Any (type_url = 1, value = 2) into a,
// which is zero. prev is the type URL of the response's resource before
// it, already found valid UTF-8: one equal to it is not checked again,
// and a takes prev's slice for it (rawAny).
func parseAny(a *rawAny, b []byte, prev []byte) error {
	// The shape every server sends: type_url, then value, once each.
	if len(b) > 0 && b[0] == typeURLTag {
		if t, rest, ok := lengthDelimited(b[1:]); ok && len(rest) > 0 && rest[0] == valueTag {
			if v, rest, ok := lengthDelimited(rest[1:]); ok && len(rest) == 0 {
				switch {
				case bytes.Equal(t, prev):
					t = prev
				case !utf8.Valid(t):
					return errEnvelope
				}
				a.typeURL, a.value = t, v
				return nil
			}
		}
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return errEnvelope
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errEnvelope
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errEnvelope
		}
		b = b[n:]
		if num == 1 {
			if !utf8.Valid(v) {
				return errEnvelope
			}
			a.typeURL = v
		} else {
			a.value = v
		}
	}
	return nil
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

// peekTypeAndNonce reads type_url (field 4) and nonce (field 5) from the
// top level of a DiscoveryResponse that proto.Unmarshal refused, skipping
// whatever else it can. It reports whether both fields were read.
func peekTypeAndNonce(b []byte) (typeURL, nonce string, ok bool) {
	var haveType, haveNonce bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 4 || num == 5) {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				break
			}
			if num == 4 {
				typeURL, haveType = string(v), true
			} else {
				nonce, haveNonce = string(v), true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			break
		}
		b = b[m:]
	}
	// Echoed in a proto string, the nonce must be valid UTF-8.
	return typeURL, strings.ToValidUTF8(nonce, "\uFFFD"), haveType && haveNonce
}

// unwrapResource takes a resource out of its envelope.Resource wrapper,
// if any, and checks its type. It returns the wrapper's name (or "") and
// the resource's bytes.
func unwrapResource(typeURL string, res *rawAny) (wrapperName string, raw []byte, err error) {
	innerType, value := res.typeURL, res.value
	if string(innerType) == resourceWrapperTypeURL {
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(value, w); err != nil {
			return "", nil, fmt.Errorf("envoy.service.discovery.v3.Resource wrapper does not parse: %w", err)
		}
		wrapperName = w.GetName()
		if wrapperName == "" {
			wrapperName = w.GetResourceName().GetName()
		}
		if w.GetResource() == nil {
			return wrapperName, nil, errors.New("envoy.service.discovery.v3.Resource wrapper holds no resource")
		}
		innerType, value = []byte(w.GetResource().GetTypeUrl()), w.GetResource().GetValue()
	}
	if string(innerType) != typeURL {
		return wrapperName, nil, fmt.Errorf("resource type %s in a response of type %q", QuoteName(string(innerType)), typeURL)
	}
	return wrapperName, value, nil
}

const resourceWrapperTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// keepEnvelope keeps the array of an envelope's resources for the next
// response, without the slices of this one; a large one is not kept.
func (s *stream) keepEnvelope(resources []rawAny) {
	clear(resources)
	if cap(resources) > maxScratch {
		s.envelope = nil
		return
	}
	s.envelope = resources[:0]
}
