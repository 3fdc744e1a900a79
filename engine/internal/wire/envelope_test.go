package wire

import (
	"bytes"
	"slices"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/internal/protoscan/protoscantest"
)

func envelopeSeeds(f *testing.F) {
	full, _ := proto.Marshal(&discoverypb.DiscoveryResponse{
		VersionInfo: "v1", TypeUrl: "t", Nonce: "n", Canary: true,
		Resources:      []*anypb.Any{{TypeUrl: "t", Value: []byte("a")}, {TypeUrl: resourceWrapperTypeURL, Value: []byte{0x0a, 0x01, 'x'}}},
		ControlPlane:   &corepb.ControlPlane{Identifier: "cp"},
		ResourceErrors: []*discoverypb.ResourceError{{ResourceName: &discoverypb.ResourceName{Name: "r"}, ErrorDetail: &rpcstatus.Status{Code: 5}}},
	})
	f.Add(full)
	f.Add([]byte{})
	// Invalid UTF-8 in a string, in the envelope and in an Any.
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff}))
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xfe})))
	// A known field with another wire type, a group, a truncated field.
	f.Add(protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 7))
	f.Add(protowire.AppendTag(protowire.AppendTag(nil, 9, protowire.StartGroupType), 9, protowire.EndGroupType))
	f.Add(full[:len(full)-3])
	// Resources whose type URLs repeat, then one that differs only by
	// invalid UTF-8; lengths written longer than needed; an Any's fields
	// in the other order, repeated, or with a value of the other wire
	// type; a value of 200 bytes (a two-byte length).
	anyOf := func(fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), bytes.Join(fields, nil))
	}
	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), []byte(v))
	}
	f.Add(bytes.Join([][]byte{anyOf(str(1, "t\xc3\xa9"), str(2, "a")), anyOf(str(1, "t\xc3\xa9"), str(2, "b")), anyOf(str(1, "t\xc3"), str(2, "c"))}, nil))
	f.Add(anyOf([]byte{0x0a, 0x81, 0x00, 't'}, []byte{0x12, 0x80, 0x00}))
	f.Add([]byte{0x12, 0x82, 0x00, 0x0a, 0x00})
	f.Add(anyOf(str(2, "v"), str(1, "t")))
	f.Add(anyOf(str(1, "t"), str(2, "v"), str(1, "u")))
	f.Add(anyOf(str(1, "t"), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1)))
	f.Add(anyOf(str(1, "t"), str(2, string(make([]byte, 200)))))
	// control_plane with invalid UTF-8, read by proto.Unmarshal.
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff})))
}

// envelopeDifferential: parseEnvelope accepts exactly what
// proto.Unmarshal accepts, and reads the same fields from it (envelopeOf
// of proto's message, the path readSotW falls back to).
var envelopeDifferential = protoscantest.Differential[envelope]{
	Fast: func(b []byte) (envelope, error) { return parseEnvelope(b, nil) },
	Reference: func(b []byte) (envelope, error) {
		var resp discoverypb.DiscoveryResponse
		if err := proto.Unmarshal(b, &resp); err != nil {
			return envelope{}, err
		}
		return envelopeOf(&resp), nil
	},
	Equal: func(a, b envelope) bool {
		return a.version == b.version && a.typeURL == b.typeURL && a.nonce == b.nonce &&
			slices.EqualFunc(a.resources, b.resources, func(x, y rawAny) bool {
				return bytes.Equal(x.typeURL, y.typeURL) && bytes.Equal(x.value, y.value)
			}) &&
			slices.EqualFunc(a.errors, b.errors, func(x, y *discoverypb.ResourceError) bool { return proto.Equal(x, y) })
	},
}

var responseDescriptor = (&discoverypb.DiscoveryResponse{}).ProtoReflect().Descriptor()

func envelopeSeedList(t testing.TB) [][]byte {
	full, err := proto.Marshal(&discoverypb.DiscoveryResponse{
		VersionInfo: "v1", TypeUrl: "t", Nonce: "n", Canary: true,
		Resources:      []*anypb.Any{{TypeUrl: "t", Value: []byte("a")}, {TypeUrl: resourceWrapperTypeURL, Value: []byte{0x0a, 0x01, 'x'}}},
		ControlPlane:   &corepb.ControlPlane{Identifier: "cp"},
		ResourceErrors: []*discoverypb.ResourceError{{ResourceName: &discoverypb.ResourceName{Name: "r"}, ErrorDetail: &rpcstatus.Status{Code: 5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{full}
}

func TestEnvelopeAgreesWithProto(t *testing.T) {
	envelopeDifferential.Test(t, responseDescriptor, envelopeSeedList(t)...)
}

// FuzzEnvelope is envelopeDifferential on any bytes, from the seeds
// below, the shared mutations and those of envelopeSeeds.
func FuzzEnvelope(f *testing.F) {
	envelopeSeeds(f)
	envelopeDifferential.Fuzz(f, responseDescriptor, envelopeSeedList(f)...)
}

// TestEnvelopeAliases: the resources of a parsed envelope are the
// response's own bytes, not copies.
func TestEnvelopeAliases(t *testing.T) {
	b, _ := proto.Marshal(&discoverypb.DiscoveryResponse{Resources: []*anypb.Any{{TypeUrl: "t", Value: []byte("value")}}})
	env, err := parseEnvelope(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := env.resources[0].value
	if i := bytes.Index(b, []byte("value")); i < 0 || &b[i] != &v[0] {
		t.Fatal("the resource's value is a copy")
	}
}

// TestEnvelopeSharesTypeURL: a resource whose type URL repeats the one
// before it shares that one's slice, which lets decode compare the type
// once per run of equal type URLs; any other keeps its own.
func TestEnvelopeSharesTypeURL(t *testing.T) {
	const a, b = "type.googleapis.com/a", "type.googleapis.com/b"
	types := []string{a, a, b, b, a}
	resp := &discoverypb.DiscoveryResponse{}
	for _, typeURL := range types {
		resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: typeURL, Value: []byte("v")})
	}
	msg, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	env, err := parseEnvelope(msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantShared := []bool{false, true, false, true, false} // with the one before
	for i, r := range env.resources {
		if string(r.typeURL) != types[i] {
			t.Errorf("resource %d: type URL %q, want %q", i, r.typeURL, types[i])
		}
		if i == 0 {
			continue
		}
		if shared := sameSlice(r.typeURL, env.resources[i-1].typeURL); shared != wantShared[i] {
			t.Errorf("resource %d shares the type URL slice of the one before: %v, want %v", i, shared, wantShared[i])
		}
	}
}
