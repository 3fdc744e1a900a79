package eds_test

import (
	"net/netip"
	"strings"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/leds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	clusterName = "backend"
	ledsA       = "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/zone-a"
	ledsB       = "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/zone-b"
)

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

func locality(zone string, prio, weight uint32, lbs ...*endpointpb.LbEndpoint) *endpointpb.LocalityLbEndpoints {
	l := &endpointpb.LocalityLbEndpoints{
		Locality:    &corepb.Locality{Region: "r", Zone: zone},
		Priority:    prio,
		LbEndpoints: lbs,
	}
	if weight > 0 {
		l.LoadBalancingWeight = wrapperspb.UInt32(weight)
	}
	return l
}

func ledsLocality(zone string, prio uint32, collection string) *endpointpb.LocalityLbEndpoints {
	l := locality(zone, prio, 1)
	l.LbConfig = &endpointpb.LocalityLbEndpoints_LedsClusterLocalityConfig{LedsClusterLocalityConfig: &endpointpb.LedsClusterLocalityConfig{
		LedsConfig:         &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}},
		LedsCollectionName: collection,
	}}
	return l
}

func cla(locs ...*endpointpb.LocalityLbEndpoints) *endpointpb.ClusterLoadAssignment {
	return &endpointpb.ClusterLoadAssignment{ClusterName: clusterName, Endpoints: locs}
}

// edit returns m after applying f, so table entries can tweak a base.
func edit[T proto.Message](m T, f func(T)) T {
	f(m)
	return m
}

func drop(category string, num uint32, den typepb.FractionalPercent_DenominatorType) *endpointpb.ClusterLoadAssignment_Policy_DropOverload {
	return &endpointpb.ClusterLoadAssignment_Policy_DropOverload{
		Category:       category,
		DropPercentage: &typepb.FractionalPercent{Numerator: num, Denominator: den},
	}
}

func withDrops(m *endpointpb.ClusterLoadAssignment, drops ...*endpointpb.ClusterLoadAssignment_Policy_DropOverload) *endpointpb.ClusterLoadAssignment {
	m.Policy = &endpointpb.ClusterLoadAssignment_Policy{DropOverloads: drops}
	return m
}

func ep(addr string) eds.Endpoint {
	return eds.Endpoint{Address: netip.MustParseAddrPort(addr), Weight: 1}
}

func zoneID(zone string) eds.LocalityID { return eds.LocalityID{Region: "r", Zone: zone} }

type validCase struct {
	name     string
	in       *endpointpb.ClusterLoadAssignment
	want     *eds.ClusterLoadAssignment
	wantDeps []registry.Ref
}

var validCases = []validCase{
	{
		name: "one locality",
		in:   cla(locality("a", 0, 1, lbEndpoint("10.0.0.1", 80))),
		want: &eds.ClusterLoadAssignment{ClusterName: clusterName, Localities: []eds.Locality{
			{ID: zoneID("a"), Weight: 1, Endpoints: []eds.Endpoint{ep("10.0.0.1:80")}},
		}},
	},
	{name: "no localities", in: cla(), want: &eds.ClusterLoadAssignment{ClusterName: clusterName}},
	{
		name: "priorities, skipped localities, endpoint details and drops",
		in: withDrops(cla(
			locality("b", 1, 2, lbEndpoint("10.0.1.1", 80)),
			// Unset and zero weights mean no load: skipped unchecked.
			locality("skipped-unset", 0, 0, lbEndpoint("not an ip", 80)),
			edit(locality("skipped-zero", 7, 0, lbEndpoint("10.0.9.9", 99999)), func(l *endpointpb.LocalityLbEndpoints) {
				l.LoadBalancingWeight = wrapperspb.UInt32(0)
			}),
			locality("a", 0, 3,
				edit(lbEndpoint("10.0.0.1", 80), func(lb *endpointpb.LbEndpoint) {
					lb.LoadBalancingWeight = wrapperspb.UInt32(5)
					lb.HealthStatus = corepb.HealthStatus_HEALTHY
					lb.GetEndpoint().Hostname = "a-1"
					lb.GetEndpoint().AdditionalAddresses = []*endpointpb.Endpoint_AdditionalAddress{
						{Address: socketAddress("2001:db8::1", 80)},
						{Address: socketAddress("fe80::1%eth0", 80)},
					}
				}),
				edit(lbEndpoint("10.0.0.2", 0), func(lb *endpointpb.LbEndpoint) { lb.HealthStatus = corepb.HealthStatus_UNHEALTHY }),
			),
			// The same locality may appear again in another priority.
			locality("a", 1, 1, lbEndpoint("10.0.1.2", 80)),
		),
			drop("lb", 5, typepb.FractionalPercent_HUNDRED),
			drop("throttle", 25, typepb.FractionalPercent_TEN_THOUSAND),
			drop("exact", 7, typepb.FractionalPercent_MILLION),
			drop("capped", 200, typepb.FractionalPercent_HUNDRED),
			drop("huge", 4_000_000_000, typepb.FractionalPercent_HUNDRED),
		),
		want: &eds.ClusterLoadAssignment{
			ClusterName: clusterName,
			Localities: []eds.Locality{
				{ID: zoneID("b"), Priority: 1, Weight: 2, Endpoints: []eds.Endpoint{ep("10.0.1.1:80")}},
				{ID: zoneID("a"), Weight: 3, Endpoints: []eds.Endpoint{
					{
						Address: netip.MustParseAddrPort("10.0.0.1:80"),
						AdditionalAddresses: []netip.AddrPort{
							netip.MustParseAddrPort("[2001:db8::1]:80"),
							netip.MustParseAddrPort("[fe80::1%eth0]:80"),
						},
						Hostname:     "a-1",
						Weight:       5,
						HealthStatus: eds.HealthHealthy,
					},
					{Address: netip.MustParseAddrPort("10.0.0.2:0"), Weight: 1, HealthStatus: eds.HealthUnhealthy},
				}},
				{ID: zoneID("a"), Priority: 1, Weight: 1, Endpoints: []eds.Endpoint{ep("10.0.1.2:80")}},
			},
			Drops: []eds.DropOverload{
				{Category: "lb", PartsPerMillion: 50_000},
				{Category: "throttle", PartsPerMillion: 2_500},
				{Category: "exact", PartsPerMillion: 7},
				{Category: "capped", PartsPerMillion: 1_000_000},
				{Category: "huge", PartsPerMillion: 1_000_000},
			},
		},
	},
	{
		name: "LEDS localities",
		in: cla(
			locality("inline", 0, 1, lbEndpoint("10.0.0.1", 80)),
			// lb_endpoints is ignored when LEDS is configured, even if invalid.
			edit(ledsLocality("a", 0, ledsA), func(l *endpointpb.LocalityLbEndpoints) {
				l.LbEndpoints = []*endpointpb.LbEndpoint{lbEndpoint("bogus", 1<<20)}
			}),
			ledsLocality("b", 1, ledsB),
			ledsLocality("a", 1, ledsA),
		),
		want: &eds.ClusterLoadAssignment{ClusterName: clusterName, Localities: []eds.Locality{
			{ID: zoneID("inline"), Weight: 1, Endpoints: []eds.Endpoint{ep("10.0.0.1:80")}},
			{ID: zoneID("a"), Weight: 1, LEDSCollection: ledsA},
			{ID: zoneID("b"), Priority: 1, Weight: 1, LEDSCollection: ledsB},
			{ID: zoneID("a"), Priority: 1, Weight: 1, LEDSCollection: ledsA},
		}},
		wantDeps: []registry.Ref{{TypeURL: leds.TypeURL, Name: ledsA}, {TypeURL: leds.TypeURL, Name: ledsB}},
	},
}

type invalidCase struct {
	name     string
	in       *endpointpb.ClusterLoadAssignment
	raw      []byte
	wantName string
	wantErr  string // "|"-separated parts
}

func noPort(lb *endpointpb.LbEndpoint) {
	lb.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
}

var invalidCases = []invalidCase{
	{name: "not a proto", raw: []byte{0x0a, 0xff}, wantName: "", wantErr: "cannot unmarshal ClusterLoadAssignment"},
	{
		name:     "empty cluster name",
		in:       edit(cla(), func(m *endpointpb.ClusterLoadAssignment) { m.ClusterName = "" }),
		wantName: "",
		wantErr:  "cluster_name: must be non-empty",
	},
	{
		name:    "locality not set",
		in:      cla(edit(locality("a", 0, 1), func(l *endpointpb.LocalityLbEndpoints) { l.Locality = nil })),
		wantErr: "endpoints[0].locality: field not present",
	},
	{
		name:    "duplicate locality in a priority",
		in:      cla(locality("a", 0, 1, lbEndpoint("10.0.0.1", 80)), locality("a", 0, 1, lbEndpoint("10.0.0.2", 80))),
		wantErr: `endpoints[1].locality: duplicate locality {region="r", zone="a", sub_zone=""} in priority 0`,
	},
	{
		name:    "priority gap",
		in:      cla(locality("a", 0, 1), locality("b", 2, 1)),
		wantErr: "endpoints: priority 1 has no localities; priorities must be contiguous from 0 (highest is 2)",
	},
	{
		name:    "priorities not starting at 0",
		in:      cla(locality("a", 1, 1), locality("b", 4294967295, 1)),
		wantErr: "endpoints: priority 0 has no localities",
	},
	{
		name:    "locality weights overflow",
		in:      cla(locality("a", 0, 1<<31), locality("b", 0, 1<<31)),
		wantErr: "endpoints[1].load_balancing_weight: sum of locality weights in priority 0 is 4294967296, exceeds 4294967295",
	},
	{
		name: "endpoint weight 0",
		in: cla(locality("a", 0, 1, lbEndpoint("10.0.0.1", 80), edit(lbEndpoint("10.0.0.2", 80), func(lb *endpointpb.LbEndpoint) {
			lb.LoadBalancingWeight = wrapperspb.UInt32(0)
		}))),
		wantErr: "endpoints[0].lb_endpoints[1].load_balancing_weight: must be greater than 0",
	},
	{
		name: "endpoint weights overflow",
		in: cla(locality("a", 0, 1,
			edit(lbEndpoint("10.0.0.1", 80), func(lb *endpointpb.LbEndpoint) { lb.LoadBalancingWeight = wrapperspb.UInt32(1 << 31) }),
			edit(lbEndpoint("10.0.0.2", 80), func(lb *endpointpb.LbEndpoint) { lb.LoadBalancingWeight = wrapperspb.UInt32(1 << 31) }),
		)),
		wantErr: "endpoints[0].lb_endpoints: sum of endpoint weights 4294967296 exceeds 4294967295",
	},
	{name: "endpoint not set", in: cla(locality("a", 0, 1, &endpointpb.LbEndpoint{})), wantErr: "endpoints[0].lb_endpoints[0].endpoint: field not present"},
	{
		name:    "named endpoint",
		in:      cla(locality("a", 0, 1, &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_EndpointName{EndpointName: "ep"}})),
		wantErr: "endpoints[0].lb_endpoints[0].endpoint_name: named endpoints are not supported",
	},
	{
		name:    "address not set",
		in:      cla(locality("a", 0, 1, &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{}}})),
		wantErr: "endpoints[0].lb_endpoints[0].endpoint.address: field not present",
	},
	{
		name:    "host name instead of IP",
		in:      cla(locality("a", 0, 1, lbEndpoint("backend.example", 80))),
		wantErr: `endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: "backend.example" is not an IPv4 or IPv6 address`,
	},
	{
		name:    "port out of range",
		in:      cla(locality("a", 0, 1, lbEndpoint("10.0.0.1", 80)), locality("b", 0, 1, lbEndpoint("10.0.0.2", 80), lbEndpoint("10.0.0.3", 80), lbEndpoint("10.0.0.4", 80), lbEndpoint("10.0.0.5", 70000))),
		wantErr: "endpoints[1].lb_endpoints[3].endpoint.address.socket_address.port_value: 70000 out of range [0, 65535]",
	},
	{
		name:    "port not set",
		in:      cla(locality("a", 0, 1, edit(lbEndpoint("10.0.0.1", 80), noPort))),
		wantErr: "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value: field not present",
	},
	{
		name: "named port",
		in: cla(locality("a", 0, 1, edit(lbEndpoint("10.0.0.1", 80), func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = &corepb.SocketAddress_NamedPort{NamedPort: "http"}
		}))),
		wantErr: "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.named_port: named ports are not supported",
	},
	{
		name:    "duplicate address across localities",
		in:      cla(locality("a", 0, 1, lbEndpoint("10.0.0.1", 80)), locality("b", 1, 1, lbEndpoint("10.0.0.1", 80))),
		wantErr: "endpoints[1].lb_endpoints[0].endpoint.address.socket_address: duplicate endpoint address 10.0.0.1:80",
	},
	{
		name: "additional address duplicates another endpoint",
		in: cla(locality("a", 0, 1, lbEndpoint("10.0.0.1", 80), edit(lbEndpoint("10.0.0.2", 80), func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().AdditionalAddresses = []*endpointpb.Endpoint_AdditionalAddress{{Address: socketAddress("10.0.0.1", 80)}}
		}))),
		wantErr: "endpoints[0].lb_endpoints[1].endpoint.additional_addresses[0].address.socket_address: duplicate endpoint address 10.0.0.1:80",
	},
	{
		name: "additional address not set",
		in: cla(locality("a", 0, 1, edit(lbEndpoint("10.0.0.1", 80), func(lb *endpointpb.LbEndpoint) {
			lb.GetEndpoint().AdditionalAddresses = []*endpointpb.Endpoint_AdditionalAddress{{}}
		}))),
		wantErr: "endpoints[0].lb_endpoints[0].endpoint.additional_addresses[0].address: field not present",
	},
	{
		name: "LEDS config source not self",
		in: cla(edit(ledsLocality("a", 0, ledsA), func(l *endpointpb.LocalityLbEndpoints) {
			l.GetLedsClusterLocalityConfig().LedsConfig = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}
		})),
		wantErr: "endpoints[0].leds_cluster_locality_config.leds_config: must have self set",
	},
	{
		name: "LEDS config source missing",
		in: cla(edit(ledsLocality("a", 0, ledsA), func(l *endpointpb.LocalityLbEndpoints) {
			l.GetLedsClusterLocalityConfig().LedsConfig = nil
		})),
		wantErr: "endpoints[0].leds_cluster_locality_config.leds_config: must have self set",
	},
	{
		name:    "LEDS glob collection not xdstp",
		in:      cla(ledsLocality("a", 0, "backend/*")),
		wantErr: `endpoints[0].leds_cluster_locality_config.leds_collection_name: "backend/*" names a glob collection but is not an xdstp:// name (xRFC TP1)`,
	},
	{
		name:    "LEDS collection name empty",
		in:      cla(ledsLocality("a", 0, "")),
		wantErr: "endpoints[0].leds_cluster_locality_config.leds_collection_name: must be non-empty",
	},
	{
		name:    "drop category empty",
		in:      withDrops(cla(), drop("", 5, typepb.FractionalPercent_HUNDRED)),
		wantErr: "policy.drop_overloads[0].category: must be non-empty",
	},
	{
		name:    "drop percentage missing",
		in:      withDrops(cla(), &endpointpb.ClusterLoadAssignment_Policy_DropOverload{Category: "lb"}),
		wantErr: "policy.drop_overloads[0].drop_percentage: field not present",
	},
	{
		name:    "drop denominator unknown",
		in:      withDrops(cla(), drop("ok", 1, typepb.FractionalPercent_HUNDRED), drop("lb", 5, 7)),
		wantErr: "policy.drop_overloads[1].drop_percentage.denominator: unknown denominator 7",
	},
	{
		name: "every problem listed",
		in: withDrops(cla(
			locality("a", 0, 1, lbEndpoint("x", 80)),
			locality("b", 3, 1, lbEndpoint("10.0.0.1", 1<<17)),
		), drop("", 1, typepb.FractionalPercent_MILLION)),
		wantErr: "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address|" +
			"endpoints[1].lb_endpoints[0].endpoint.address.socket_address.port_value|" +
			"endpoints: priority 1 has no localities|policy.drop_overloads[0].category",
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

func decode(t testing.TB, m proto.Message) *eds.ClusterLoadAssignment {
	t.Helper()
	res, err := eds.Type.Decode(marshal(t, m), registry.DecodeOptions{})
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	return res.Resource.(*eds.ClusterLoadAssignment)
}

// view is the exported content of a ClusterLoadAssignment; cmp would
// otherwise call its Equal, which compares the bytes it came from.
type view struct {
	ClusterName string
	Localities  []eds.Locality
	Drops       []eds.DropOverload
}

func viewOf(c *eds.ClusterLoadAssignment) view {
	return view{c.ClusterName, c.Localities, c.Drops}
}

var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b }),
	cmpopts.EquateEmpty(),
}

func TestDecodeValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			got := decode(t, tc.in)
			if diff := cmp.Diff(viewOf(tc.want), viewOf(got), cmpOpts); diff != "" {
				t.Errorf("Decode() mismatch (-want +got):\n%s", diff)
			}
			if got.Composed() {
				t.Error("Composed() = true for a decoded resource")
			}
		})
	}
}

func TestConformance(t *testing.T) {
	var cases []registrytest.Case
	for _, tc := range validCases {
		deps := tc.wantDeps
		if deps == nil {
			deps = []registry.Ref{}
		}
		cases = append(cases, registrytest.Case{Name: "valid/" + tc.name, Message: tc.in, WantName: clusterName, WantDeps: deps})
	}
	for _, tc := range invalidCases {
		name := clusterName
		if tc.raw != nil || tc.in.GetClusterName() == "" {
			name = tc.wantName
		}
		cases = append(cases, registrytest.Case{Name: "invalid/" + tc.name, Message: tc.in, Raw: tc.raw, WantName: name, WantErr: tc.wantErr})
	}
	registrytest.Run(t, eds.Type, cases)
}

func TestProto(t *testing.T) {
	in := validCases[2].in
	if diff := cmp.Diff(in, decode(t, in).Proto(), protocmp.Transform()); diff != "" {
		t.Errorf("Proto() mismatch (-want +got):\n%s", diff)
	}
}

func TestLEDSCollections(t *testing.T) {
	got := decode(t, validCases[3].in).LEDSCollections()
	if want := []string{ledsA, ledsB}; !cmp.Equal(got, want) {
		t.Errorf("LEDSCollections() = %q, want %q", got, want)
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range validCases {
		f.Add(marshal(f, tc.in))
	}
	for _, tc := range invalidCases {
		raw := tc.raw
		if raw == nil {
			raw = marshal(f, tc.in)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r1, problem, err := registrytest.DecodeTwice(eds.Type, raw, registry.DecodeOptions{})
		if problem != "" {
			t.Fatal(problem)
		}
		if err != nil {
			return
		}
		r2, _ := eds.Type.Decoder.Decode(raw, registry.DecodeOptions{})
		c1, c2 := r1.Resource.(*eds.ClusterLoadAssignment), r2.Resource.(*eds.ClusterLoadAssignment)
		if !c1.Equal(c2) || !cmp.Equal(viewOf(c1), viewOf(c2), cmpOpts) {
			t.Fatal("two decodings of the same bytes differ")
		}
		// Priorities of a valid resource are contiguous from 0.
		seen := map[uint32]bool{}
		for _, l := range c1.Localities {
			seen[l.Priority] = true
			if l.Weight == 0 {
				t.Fatal("a locality with weight 0 was kept")
			}
		}
		for p := range seen {
			if int(p) >= len(seen) {
				t.Fatalf("priority %d of %d is out of sequence", p, len(seen))
			}
		}
	})
}

// TestIgnoreLEDS: with GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false a
// locality's LEDS config is ignored and its lb_endpoints are used, even
// a config A95 would reject.
func TestIgnoreLEDS(t *testing.T) {
	l := ledsLocality("z", 0, "backend/*")
	l.LbEndpoints = []*endpointpb.LbEndpoint{lbEndpoint("10.0.0.1", 80)}
	raw := marshal(t, cla(l))
	if _, err := eds.Type.Decode(raw, registry.DecodeOptions{}); err == nil {
		t.Fatal("default EDS type accepted a glob LEDS collection that is not an xdstp:// name")
	}
	res, err := eds.Type.Decode(raw, registry.DecodeOptions{Switches: features.Switches{DisableEndpointFallback: true}})
	if err != nil {
		t.Fatalf("Decode with DisableEndpointFallback: %v", err)
	}
	got := res.Resource.(*eds.ClusterLoadAssignment)
	if len(got.LEDSCollections()) != 0 || len(got.Localities[0].Endpoints) != 1 || got.Localities[0].Endpoints[0].Address.String() != "10.0.0.1:80" {
		t.Fatalf("got %+v, want lb_endpoints used and no collection", got.Localities)
	}
	if deps := eds.Type.Refs(got); len(deps) != 0 {
		t.Fatalf("dependencies %v, want none", deps)
	}
}

// TestLEDSCollectionNames: a glob collection (xRFC TP1) exists only over
// incremental xDS, so a State-of-the-World server's glob name is NACKed
// as gRFC A95 says; and a collection name must carry the type its kind
// of collection holds, so that a wrong one is NACKed here rather than
// failing later, in the graph, with a type mismatch (issue 39).
func TestLEDSCollectionNames(t *testing.T) {
	const (
		list       = "xdstp://a.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/z"
		glob       = "xdstp://a.example/envoy.config.endpoint.v3.LbEndpoint/backend/z/*"
		globQuery  = "xdstp://a.example/envoy.config.endpoint.v3.LbEndpoint/backend/z/*?k=v"
		field      = "endpoints[0].leds_cluster_locality_config.leds_collection_name: "
		sotw, incr = false, true
	)
	tests := []struct {
		name    string
		delta   bool
		in      string
		wantErr string // "" for valid
	}{
		{"list, SotW", sotw, list, ""},
		{"list, incremental", incr, list, ""},
		{"old-style list, SotW", sotw, "backend-z", ""},
		{"glob, incremental", incr, glob, ""},
		{"glob with context parameters, incremental", incr, globQuery, ""},
		{"glob, SotW", sotw, glob, field + `"` + glob + `" names a glob collection, which only incremental xDS serves (xRFC TP1); this server speaks State of the World, where gRFC A95 allows list collections only`},
		{"glob with context parameters, SotW", sotw, globQuery, "only incremental xDS serves"},
		{"glob of collections", incr, "xdstp://a.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/*",
			field + `glob collection "xdstp://a.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/*" names resource type "envoy.config.endpoint.v3.LbEndpointCollection", want "envoy.config.endpoint.v3.LbEndpoint"`},
		{"glob of clusters", incr, "xdstp://a.example/envoy.config.cluster.v3.Cluster/backend/*", `names resource type "envoy.config.cluster.v3.Cluster", want "envoy.config.endpoint.v3.LbEndpoint"`},
		{"list of endpoints", sotw, "xdstp://a.example/envoy.config.endpoint.v3.LbEndpoint/backend/z",
			field + `list collection "xdstp://a.example/envoy.config.endpoint.v3.LbEndpoint/backend/z" names resource type "envoy.config.endpoint.v3.LbEndpoint", want "envoy.config.endpoint.v3.LbEndpointCollection"`},
		{"xdstp name that does not parse", incr, "xdstp://a.example", field},
		{"old-style glob", incr, "backend/*", "is not an xdstp:// name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := registry.DecodeOptions{Server: registry.ServerInfo{URI: "xds.example:443", Delta: tc.delta}}
			res, err := eds.Type.Decode(marshal(t, cla(ledsLocality("z", 0, tc.in))), opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode() error = %v, want none", err)
				}
				if got := res.Resource.(*eds.ClusterLoadAssignment).LEDSCollections(); len(got) != 1 || got[0] != tc.in {
					t.Fatalf("LEDSCollections() = %v, want [%s]", got, tc.in)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
