package lbendpoint

import (
	"errors"
	"math"
	"reflect"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/internal/protoscan/protoscantest"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/endpoint"
)

func lbEndpoint(ip string, port uint32, edit func(*endpointpb.LbEndpoint)) *endpointpb.LbEndpoint {
	lb := &endpointpb.LbEndpoint{
		HealthStatus: corepb.HealthStatus_HEALTHY,
		HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: &corepb.Address{
			Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port},
			}},
		}}},
	}
	if edit != nil {
		edit(lb)
	}
	return lb
}

func socketAddress(lb *endpointpb.LbEndpoint) *corepb.SocketAddress {
	return lb.GetEndpoint().GetAddress().GetSocketAddress()
}

// slowDecode is the path DecodeBytes must agree with: proto.Unmarshal,
// then Decode.
func slowDecode(b []byte) (endpoint.Endpoint, bool) {
	var lb endpointpb.LbEndpoint
	if proto.Unmarshal(b, &lb) != nil {
		return endpoint.Endpoint{}, false
	}
	var errs registry.FieldErrors
	var out endpoint.Endpoint
	ok := NewDecoder(&errs, 1).Decode(&lb, &out, func() string { return "lb" })
	return out, ok && errs.Err() == nil
}

func TestDecodeBytes(t *testing.T) {
	tests := []struct {
		name string
		lb   *endpointpb.LbEndpoint
		raw  []byte // instead of lb
		fast bool   // DecodeBytes takes it
	}{
		{name: "IPv4", lb: lbEndpoint("10.0.0.1", 8080, nil), fast: true},
		{name: "IPv6", lb: lbEndpoint("2001:db8::1", 443, nil), fast: true},
		{name: "hostname, weight, health", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().Hostname = "a.example"
			lb.LoadBalancingWeight = wrapperspb.UInt32(7)
			lb.HealthStatus = corepb.HealthStatus_DRAINING
		}), fast: true},
		{name: "protocol, resolver and ipv4_compat are read past", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			sa := socketAddress(lb)
			sa.Protocol, sa.ResolverName, sa.Ipv4Compat = corepb.SocketAddress_UDP, "r", true
		}), fast: true},
		{name: "port 0 sent explicitly", lb: lbEndpoint("10.0.0.1", 0, nil), fast: true},
		{name: "zero weight", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			lb.LoadBalancingWeight = wrapperspb.UInt32(0)
		})},
		{name: "port out of range", lb: lbEndpoint("10.0.0.1", 70000, nil)},
		{name: "not an IP", lb: lbEndpoint("example.com", 80, nil)},
		{name: "named port", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			socketAddress(lb).PortSpecifier = &corepb.SocketAddress_NamedPort{NamedPort: "http"}
		})},
		{name: "no port", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			socketAddress(lb).PortSpecifier = nil
		})},
		{name: "endpoint_name", lb: &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_EndpointName{EndpointName: "n"}}},
		{name: "no endpoint", lb: &endpointpb.LbEndpoint{}},
		{name: "metadata", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			lb.Metadata = &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"f": {}}}
		})},
		{name: "additional address", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().AdditionalAddresses = []*endpointpb.Endpoint_AdditionalAddress{{Address: lbEndpoint("10.0.0.2", 80, nil).GetEndpoint().GetAddress()}}
		})},
		{name: "negative health status", lb: lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			lb.HealthStatus = -1
		})},
		{
			name: "endpoint sent twice, which proto merges",
			raw: func() []byte {
				b := mustMarshal(t, lbEndpoint("10.0.0.1", 80, nil))
				ep := mustMarshal(t, &endpointpb.Endpoint{Hostname: "h"})
				b = protowire.AppendTag(b, 1, protowire.BytesType)
				return protowire.AppendBytes(b, ep)
			}(),
		},
		{name: "invalid UTF-8 hostname", raw: func() []byte {
			ep := mustMarshal(t, lbEndpoint("10.0.0.1", 80, nil).GetEndpoint())
			ep = protowire.AppendTag(ep, 3, protowire.BytesType)
			ep = protowire.AppendBytes(ep, []byte{0xff})
			b := protowire.AppendTag(nil, 1, protowire.BytesType)
			return protowire.AppendBytes(b, ep)
		}()},
		{name: "truncated", raw: mustMarshal(t, lbEndpoint("10.0.0.1", 80, nil))[:5]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.raw
			if b == nil {
				b = mustMarshal(t, tc.lb)
			}
			var errs registry.FieldErrors
			var fast endpoint.Endpoint
			got := NewDecoder(&errs, 1).DecodeBytes(b, &fast)
			if got != tc.fast {
				t.Fatalf("DecodeBytes = %v, want %v", got, tc.fast)
			}
			if errs.Err() != nil {
				t.Fatalf("DecodeBytes recorded %v; it must leave errors to Decode", errs.Err())
			}
			slow, ok := slowDecode(b)
			if got && (!ok || !reflect.DeepEqual(fast, slow)) {
				t.Fatalf("DecodeBytes gave %+v, Decode %+v (valid %v)", fast, slow, ok)
			}
		})
	}
}

// TestDecodeBytesDuplicate: a second endpoint with the same address is
// left to Decode, which reports it; the first is remembered either way.
func TestDecodeBytesDuplicate(t *testing.T) {
	var errs registry.FieldErrors
	d := NewDecoder(&errs, 2)
	b := mustMarshal(t, lbEndpoint("10.0.0.1", 80, nil))
	var out endpoint.Endpoint
	if !d.DecodeBytes(b, &out) {
		t.Fatal("first endpoint refused")
	}
	if d.DecodeBytes(b, &out) {
		t.Fatal("duplicate address taken")
	}
	var lb endpointpb.LbEndpoint
	if err := proto.Unmarshal(b, &lb); err != nil {
		t.Fatal(err)
	}
	if d.Decode(&lb, &out, func() string { return "lb_endpoints[1]" }) || errs.Err() == nil {
		t.Fatal("Decode accepted the duplicate address")
	}
}

// decodeBytes: whatever DecodeBytes accepts, proto.Unmarshal and Decode
// accept with the same result; what it declines, Decode judges.
var decodeBytes = protoscantest.Differential[endpoint.Endpoint]{
	Fast: func(b []byte) (endpoint.Endpoint, error) {
		var errs registry.FieldErrors
		var fast endpoint.Endpoint
		if !NewDecoder(&errs, 1).DecodeBytes(b, &fast) {
			return endpoint.Endpoint{}, protoscantest.ErrDeclined
		}
		return fast, nil
	},
	Reference: func(b []byte) (endpoint.Endpoint, error) {
		ep, ok := slowDecode(b)
		if !ok {
			return ep, errors.New("proto.Unmarshal or Decode refuses it")
		}
		return ep, nil
	},
}

// decodeBytesSeeds are endpoints of the usual shape and around it.
func decodeBytesSeeds(tb testing.TB) [][]byte {
	return [][]byte{
		mustMarshal(tb, lbEndpoint("10.0.0.1", 8080, nil)),
		mustMarshal(tb, lbEndpoint("2001:db8::1%eth0", 1, func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().Hostname = "h"
			lb.LoadBalancingWeight = wrapperspb.UInt32(3)
		})),
		mustMarshal(tb, lbEndpoint("10.0.0.1", 80, func(lb *endpointpb.LbEndpoint) {
			sa := socketAddress(lb)
			sa.Protocol, sa.ResolverName, sa.Ipv4Compat = corepb.SocketAddress_UDP, "r", true
			lb.HealthStatus = corepb.HealthStatus_DRAINING
		})),
		mustMarshal(tb, lbEndpoint("10.0.0.1", 65535, func(lb *endpointpb.LbEndpoint) {
			lb.LoadBalancingWeight = wrapperspb.UInt32(math.MaxUint32)
		})),
	}
}

var lbEndpointDescriptor = (&endpointpb.LbEndpoint{}).ProtoReflect().Descriptor()

func TestDecodeBytesAgreesWithProto(t *testing.T) {
	decodeBytes.Test(t, lbEndpointDescriptor, decodeBytesSeeds(t)...)
}

func FuzzDecodeBytes(f *testing.F) {
	decodeBytes.Fuzz(f, lbEndpointDescriptor, decodeBytesSeeds(f)...)
}

func mustMarshal(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
