package wire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/protoscan"
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
// response, is split inline when its length allows
// (protoscan.CutShortBytes).
func nextField(b []byte) (num protoscan.Number, v, rest []byte, err error) {
	if b[0] == resourcesTag {
		if v, rest, ok := protoscan.CutShortBytes(b[1:]); ok {
			return 2, v, rest, nil
		}
	}
	f, n, err := protoscan.Next(b)
	if err != nil {
		return 0, nil, nil, errEnvelope
	}
	if f.Type != protoscan.BytesType || f.Num > 7 || f.Num == 3 {
		return 0, nil, b[n:], nil
	}
	return f.Num, f.Value, b[n:], nil
}

// countResources counts the resources field of a DiscoveryResponse, so
// that they are collected into one allocation. It stops, uncounted, at
// what it cannot read: parseEnvelope then says why.
func countResources(b []byte) int {
	n := 0
	it := protoscan.Fields(b)
	for it.Next() {
		if it.Is(2, protoscan.BytesType) {
			n++
		}
	}
	return n
}

// The tags of the fields read most: DiscoveryResponse.resources (2) and
// Any's type_url (1) and value (2), all length-delimited.
const (
	resourcesTag = 2<<3 | byte(protoscan.BytesType)
	typeURLTag   = 1<<3 | byte(protoscan.BytesType)
	valueTag     = 2<<3 | byte(protoscan.BytesType)
)

// parseAny reads a google.protobuf.Any (type_url = 1, value = 2) into a,
// which is zero. prev is the type URL of the response's resource before
// it, already found valid UTF-8: one equal to it is not checked again,
// and a takes prev's slice for it (rawAny).
func parseAny(a *rawAny, b []byte, prev []byte) error {
	// The shape every server sends: type_url, then value, once each.
	if len(b) > 0 && b[0] == typeURLTag {
		if t, rest, ok := protoscan.CutShortBytes(b[1:]); ok && len(rest) > 0 && rest[0] == valueTag {
			if v, rest, ok := protoscan.CutShortBytes(rest[1:]); ok && len(rest) == 0 {
				switch {
				case bytes.Equal(t, prev):
					t = prev
				case !protoscan.ValidUTF8(t):
					return errEnvelope
				}
				a.typeURL, a.value = t, v
				return nil
			}
		}
	}
	it := protoscan.Fields(b)
	for it.Next() {
		switch {
		case it.Is(1, protoscan.BytesType):
			if !protoscan.ValidUTF8(it.Value) {
				return errEnvelope
			}
			a.typeURL = it.Value
		case it.Is(2, protoscan.BytesType):
			a.value = it.Value
		}
	}
	if it.Err() != nil {
		return errEnvelope
	}
	return nil
}

func utf8String(v []byte) (string, error) {
	if !protoscan.ValidUTF8(v) {
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
	it := protoscan.Fields(b)
	for it.Next() {
		switch {
		case it.Is(4, protoscan.BytesType):
			typeURL, haveType = string(it.Value), true
		case it.Is(5, protoscan.BytesType):
			nonce, haveNonce = string(it.Value), true
		}
	}
	// Echoed in a proto string, the nonce must be valid UTF-8.
	return typeURL, strings.ToValidUTF8(nonce, "\uFFFD"), haveType && haveNonce
}

// unwrapResource takes a resource out of its envelope.Resource wrapper,
// if any, and checks its type. It returns the wrapper's name (or "") and
// ttl, and the resource's bytes.
func unwrapResource(typeURL string, res *rawAny) (wrapperName string, raw []byte, ttl time.Duration, err error) {
	innerType, value := res.typeURL, res.value
	if string(innerType) == resourceWrapperTypeURL {
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(value, w); err != nil {
			return "", nil, 0, fmt.Errorf("envoy.service.discovery.v3.Resource wrapper does not parse: %w", err)
		}
		wrapperName = w.GetName()
		if wrapperName == "" {
			wrapperName = w.GetResourceName().GetName()
		}
		if w.GetResource() == nil {
			return wrapperName, nil, 0, errors.New("envoy.service.discovery.v3.Resource wrapper holds no resource")
		}
		innerType, value, ttl = []byte(w.GetResource().GetTypeUrl()), w.GetResource().GetValue(), w.GetTtl().AsDuration()
	}
	if string(innerType) != typeURL {
		return wrapperName, nil, 0, fmt.Errorf("resource type %s in a response of type %q", QuoteName(string(innerType)), typeURL)
	}
	return wrapperName, value, max(ttl, 0), nil
}

const resourceWrapperTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// envelopeArray returns an array to read an envelope's resources into,
// with no length (parseEnvelope sizes a new one when it has no room).
func envelopeArray() []rawAny {
	if p, _ := envelopeArrays.Get().(*[]rawAny); p != nil {
		return (*p)[:0]
	}
	return nil
}

// releaseEnvelope gives an envelope's array back, without the slices of
// the response it held.
func releaseEnvelope(resources []rawAny) {
	clear(resources)
	resources = resources[:0]
	envelopeArrays.Put(&resources)
}
