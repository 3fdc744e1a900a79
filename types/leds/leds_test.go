package leds_test

import (
	"net/netip"
	"strings"
	"testing"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/leds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const collName = "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/svc-a/locality-1"

var named = registry.DecodeOptions{WrapperName: collName}

func socketAddress(ip string, port uint32) *corepb.Address {
	return &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
		Address:       ip,
		PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port},
	}}}
}

func lbEndpoint(ip string, port uint32) *endpointpb.LbEndpoint {
	return &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{
		Endpoint: &endpointpb.Endpoint{Address: socketAddress(ip, port)},
	}}
}

// with applies edits to a fresh endpoint, so table entries stay short.
func with(lb *endpointpb.LbEndpoint, edits ...func(*endpointpb.LbEndpoint)) *endpointpb.LbEndpoint {
	for _, e := range edits {
		e(lb)
	}
	return lb
}

func weight(w uint32) func(*endpointpb.LbEndpoint) {
	return func(lb *endpointpb.LbEndpoint) { lb.LoadBalancingWeight = wrapperspb.UInt32(w) }
}

func inline(m proto.Message) *xdscorepb.CollectionEntry {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return &xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
		InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Name: "ep", Resource: a},
	}}
}

func collection(entries ...*xdscorepb.CollectionEntry) *endpointpb.LbEndpointCollection {
	return &endpointpb.LbEndpointCollection{Entries: entries}
}

func endpoints(lbs ...*endpointpb.LbEndpoint) *endpointpb.LbEndpointCollection {
	c := collection()
	for _, lb := range lbs {
		c.Entries = append(c.Entries, inline(lb))
	}
	return c
}

type validCase struct {
	name string
	in   *endpointpb.LbEndpointCollection
	want []leds.Endpoint
}

var validCases = []validCase{
	{name: "empty collection is an unreachable locality", in: collection()},
	{
		name: "endpoints with every optional field",
		in: endpoints(
			with(lbEndpoint("10.0.0.1", 8080), weight(3), func(lb *endpointpb.LbEndpoint) {
				lb.HealthStatus = corepb.HealthStatus_HEALTHY
				lb.GetEndpoint().Hostname = "backend-1"
				lb.GetEndpoint().AdditionalAddresses = []*endpointpb.Endpoint_AdditionalAddress{{Address: socketAddress("2001:db8::1", 8080)}}
			}),
			with(lbEndpoint("10.0.0.2", 0), func(lb *endpointpb.LbEndpoint) { lb.HealthStatus = corepb.HealthStatus_DRAINING }),
		),
		want: []leds.Endpoint{
			{
				Address:             netip.MustParseAddrPort("10.0.0.1:8080"),
				AdditionalAddresses: []netip.AddrPort{netip.MustParseAddrPort("[2001:db8::1]:8080")},
				Hostname:            "backend-1",
				Weight:              3,
				HealthStatus:        leds.HealthHealthy,
			},
			{Address: netip.MustParseAddrPort("10.0.0.2:0"), Weight: 1, HealthStatus: leds.HealthDraining},
		},
	},
}

type invalidCase struct {
	name    string
	in      *endpointpb.LbEndpointCollection
	raw     []byte
	opts    *registry.DecodeOptions
	wantErr string // "|"-separated parts
}

var invalidCases = []invalidCase{
	{name: "no wrapper name", in: collection(), opts: &registry.DecodeOptions{}, wantErr: "must arrive in a named envoy.service.discovery.v3.Resource wrapper"},
	{name: "not a proto", raw: []byte{0x0a, 0xff}, wantErr: "cannot unmarshal LbEndpointCollection"},
	{
		name: "locator entry",
		in: collection(&xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_Locator{
			Locator: &xdscorepb.ResourceLocator{Id: "x"},
		}}),
		wantErr: "entries[0].locator: not supported; entries must be inline_entry",
	},
	{name: "entry with no specifier", in: collection(&xdscorepb.CollectionEntry{}), wantErr: "entries[0].inline_entry: field not present"},
	{
		name: "inline entry without resource",
		in: collection(&xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
			InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Name: "ep"},
		}}),
		wantErr: "entries[0].inline_entry.resource: field not present",
	},
	{
		name:    "resource of another type",
		in:      collection(inline(&clusterpb.Cluster{Name: "c"})),
		wantErr: `entries[0].inline_entry.resource.type_url: "type.googleapis.com/envoy.config.cluster.v3.Cluster" is not envoy.config.endpoint.v3.LbEndpoint`,
	},
	{
		name: "resource bytes that are not an LbEndpoint",
		in: collection(&xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
			InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Resource: &anypb.Any{
				TypeUrl: "type.googleapis.com/envoy.config.endpoint.v3.LbEndpoint", Value: []byte{0x0a, 0xff},
			}},
		}}),
		wantErr: "entries[0].inline_entry.resource: cannot unmarshal LbEndpoint",
	},
	{name: "endpoint not set", in: endpoints(&endpointpb.LbEndpoint{}), wantErr: "entries[0].inline_entry.resource.endpoint: field not present"},
	{
		name:    "host name instead of IP",
		in:      endpoints(lbEndpoint("backend.example", 80)),
		wantErr: `entries[0].inline_entry.resource.endpoint.address.socket_address.address: "backend.example" is not an IPv4 or IPv6 address`,
	},
	{
		name:    "port out of range",
		in:      endpoints(lbEndpoint("10.0.0.1", 80), lbEndpoint("10.0.0.2", 70000)),
		wantErr: "entries[1].inline_entry.resource.endpoint.address.socket_address.port_value: 70000 out of range [0, 65535]",
	},
	{
		name:    "zero weight",
		in:      endpoints(with(lbEndpoint("10.0.0.1", 80), weight(0))),
		wantErr: "entries[0].inline_entry.resource.load_balancing_weight: must be greater than 0",
	},
	{
		name:    "duplicate address",
		in:      endpoints(lbEndpoint("10.0.0.1", 80), lbEndpoint("10.0.0.1", 80)),
		wantErr: "entries[1].inline_entry.resource.endpoint.address.socket_address: duplicate endpoint address 10.0.0.1:80",
	},
	{
		name:    "weights overflow uint32",
		in:      endpoints(with(lbEndpoint("10.0.0.1", 80), weight(1<<31)), with(lbEndpoint("10.0.0.2", 80), weight(1<<31))),
		wantErr: "entries: sum of endpoint weights 4294967296 exceeds 4294967295",
	},
	{
		name: "bad additional address",
		in: endpoints(with(lbEndpoint("10.0.0.1", 80), func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().AdditionalAddresses = []*endpointpb.Endpoint_AdditionalAddress{{Address: socketAddress("::1::2", 80)}}
		})),
		wantErr: `entries[0].inline_entry.resource.endpoint.additional_addresses[0].address.socket_address.address: "::1::2" is not an IPv4 or IPv6 address`,
	},
	{
		name: "pipe address",
		in: endpoints(&endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
			Address: &corepb.Address{Address: &corepb.Address_Pipe{Pipe: &corepb.Pipe{Path: "/tmp/s"}}},
		}}}),
		wantErr: "entries[0].inline_entry.resource.endpoint.address.socket_address: field not present",
	},
	{
		name:    "every problem listed",
		in:      endpoints(with(lbEndpoint("nope", 80), weight(0)), lbEndpoint("10.0.0.1", 1<<20)),
		wantErr: "entries[0].inline_entry.resource.load_balancing_weight|entries[0].inline_entry.resource.endpoint.address.socket_address.address|entries[1].inline_entry.resource.endpoint.address.socket_address.port_value",
	},
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var cmpEndpoints = cmp.Options{
	cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b }),
	cmpopts.EquateEmpty(),
}

func TestDecodeValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := leds.Type.Decode(marshal(t, tc.in), named)
			if err != nil {
				t.Fatalf("Decode() error = %v, want nil", err)
			}
			got := res.Resource.(*leds.LbEndpointCollection)
			if got.Name != collName {
				t.Errorf("Decode() Name = %q, want %q", got.Name, collName)
			}
			// Endpoints, not the whole value: cmp would call its Equal.
			if diff := cmp.Diff(tc.want, got.Endpoints, cmpEndpoints); diff != "" {
				t.Errorf("Decode() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func conformanceCases(t *testing.T) []registrytest.Case {
	var cases []registrytest.Case
	for _, tc := range validCases {
		cases = append(cases, registrytest.Case{
			Name: "valid/" + tc.name, Message: tc.in, Options: named, WantName: collName, WantDeps: []registry.Ref{},
		})
	}
	for _, tc := range invalidCases {
		c := registrytest.Case{Name: "invalid/" + tc.name, Message: tc.in, Raw: tc.raw, Options: named, WantName: collName, WantErr: tc.wantErr}
		if tc.opts != nil {
			c.Options, c.WantName = *tc.opts, tc.opts.WrapperName
		}
		cases = append(cases, c)
	}
	return cases
}

func TestConformance(t *testing.T) {
	registrytest.Run(t, leds.Type, conformanceCases(t))
}

func TestEqual(t *testing.T) {
	a := decode(t, endpoints(lbEndpoint("10.0.0.1", 80)), named)
	b := decode(t, endpoints(lbEndpoint("10.0.0.1", 80)), named)
	c := decode(t, endpoints(lbEndpoint("10.0.0.1", 81)), named)
	other := decode(t, endpoints(lbEndpoint("10.0.0.1", 80)), registry.DecodeOptions{WrapperName: collName + "-2"})
	if !a.Equal(b) {
		t.Error("Equal(same bytes) = false, want true")
	}
	if a.Equal(c) {
		t.Error("Equal(other port) = true, want false")
	}
	if a.Equal(other) {
		t.Error("Equal(same bytes, other name) = true, want false")
	}
	if a.Equal("not a collection") {
		t.Error("Equal(string) = true, want false")
	}
}

func TestProto(t *testing.T) {
	in := endpoints(lbEndpoint("10.0.0.1", 80))
	got := decode(t, in, named).Proto()
	if diff := cmp.Diff(in, got, protocmp.Transform()); diff != "" {
		t.Errorf("Proto() mismatch (-want +got):\n%s", diff)
	}
}

func decode(t *testing.T, m proto.Message, opts registry.DecodeOptions) *leds.LbEndpointCollection {
	t.Helper()
	res, err := leds.Type.Decode(marshal(t, m), opts)
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	return res.Resource.(*leds.LbEndpointCollection)
}

func FuzzDecode(f *testing.F) {
	for _, tc := range validCases {
		f.Add(marshal(f, tc.in), collName)
	}
	for _, tc := range invalidCases {
		raw := tc.raw
		if raw == nil {
			raw = marshal(f, tc.in)
		}
		f.Add(raw, collName)
	}
	f.Fuzz(func(t *testing.T, raw []byte, name string) {
		opts := registry.DecodeOptions{WrapperName: name}
		r1, problem, err := registrytest.DecodeTwice(leds.Type, raw, opts)
		if problem != "" {
			t.Fatal(problem)
		}
		if err == nil {
			r2, _ := leds.Type.Decoder.Decode(raw, opts)
			c1, c2 := r1.Resource.(*leds.LbEndpointCollection), r2.Resource.(*leds.LbEndpointCollection)
			if !c1.Equal(c2) || c1.Name != name {
				t.Fatalf("two decodings differ or the name is lost: %q vs %q", c1.Name, name)
			}
		}
	})
}

// TestEndpointType: a glob collection's member is one LbEndpoint,
// validated like an EDS lb_endpoints entry, named by its wrapper.
func TestEndpointType(t *testing.T) {
	const name = "xdstp://a/envoy.config.endpoint.v3.LbEndpoint/backend/m1"
	for _, tc := range []struct {
		desc    string
		lb      *endpointpb.LbEndpoint
		wrapper string
		wantErr string
	}{
		{"valid", lbEndpoint("10.0.0.1", 80), name, ""},
		{"unnamed", lbEndpoint("10.0.0.1", 80), "", "must arrive in a named"},
		{"weight 0", func() *endpointpb.LbEndpoint {
			lb := lbEndpoint("10.0.0.1", 80)
			lb.LoadBalancingWeight = wrapperspb.UInt32(0)
			return lb
		}(), name, "LbEndpoint.load_balancing_weight: must be greater than 0"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			raw, err := proto.Marshal(tc.lb)
			if err != nil {
				t.Fatal(err)
			}
			res, err := leds.EndpointType.Decode(raw, registry.DecodeOptions{WrapperName: tc.wrapper})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lb := res.Resource.(*leds.LbEndpoint)
			if lb.Name != name || lb.Endpoint.Address.String() != "10.0.0.1:80" || lb.String() != "10.0.0.1:80" {
				t.Fatalf("got %+v", lb)
			}
			if !lb.Equal(lb) || !proto.Equal(lb.Proto(), tc.lb) {
				t.Error("Equal or Proto do not round-trip")
			}
		})
	}
}
