package eds

import (
	"reflect"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

func splitSeedEndpoint(ip string, port uint32) *endpointpb.LbEndpoint {
	return &endpointpb.LbEndpoint{
		HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: &corepb.Address{
			Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port},
			}},
		}}},
	}
}

func splitSeedLocality(zone string, priority, weight uint32, eps ...*endpointpb.LbEndpoint) *endpointpb.LocalityLbEndpoints {
	return &endpointpb.LocalityLbEndpoints{
		Locality:            &corepb.Locality{Region: "r", Zone: zone},
		Priority:            priority,
		LoadBalancingWeight: wrapperspb.UInt32(weight),
		LbEndpoints:         eps,
	}
}

// splitSeeds are resources that take each way through decode: endpoints
// read from bytes, endpoints left to proto, ignored localities, errors.
func splitSeeds(tb testing.TB) [][]byte {
	named := splitSeedEndpoint("10.0.0.9", 80)
	named.HostIdentifier = &endpointpb.LbEndpoint_EndpointName{EndpointName: "n"}
	weighted := splitSeedEndpoint("10.0.0.3", 80)
	weighted.LoadBalancingWeight = wrapperspb.UInt32(5)
	weighted.GetEndpoint().Hostname = "h"
	leds := splitSeedLocality("leds", 0, 1)
	leds.LbConfig = &endpointpb.LocalityLbEndpoints_LedsClusterLocalityConfig{LedsClusterLocalityConfig: &endpointpb.LedsClusterLocalityConfig{
		LedsConfig: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{}}, LedsCollectionName: "c",
	}}
	leds.LbEndpoints = []*endpointpb.LbEndpoint{splitSeedEndpoint("10.0.0.7", 1)}
	msgs := []*endpointpb.ClusterLoadAssignment{
		{ClusterName: "a", Endpoints: []*endpointpb.LocalityLbEndpoints{
			splitSeedLocality("z1", 0, 1, splitSeedEndpoint("10.0.0.1", 80), weighted, splitSeedEndpoint("2001:db8::1", 443)),
			splitSeedLocality("z2", 1, 2, splitSeedEndpoint("10.0.0.2", 80)),
		}},
		{ClusterName: "dup", Endpoints: []*endpointpb.LocalityLbEndpoints{
			splitSeedLocality("z1", 0, 1, splitSeedEndpoint("10.0.0.1", 80), named, splitSeedEndpoint("10.0.0.1", 80)),
			splitSeedLocality("z0", 0, 0, splitSeedEndpoint("bad", 80)),
			leds,
		}},
		{ClusterName: "drops", Policy: &endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*endpointpb.ClusterLoadAssignment_Policy_DropOverload{
			{Category: "c", DropPercentage: &typepb.FractionalPercent{Numerator: 5}},
		}}, Endpoints: []*endpointpb.LocalityLbEndpoints{splitSeedLocality("z", 0, 1, splitSeedEndpoint("10.0.0.1", 70000))}},
		{},
	}
	var out [][]byte
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	// An endpoint that does not parse, in a locality of weight 0, which
	// the rules ignore but proto.Unmarshal of the whole refuses.
	loc := protowire.AppendTag(nil, 3, protowire.BytesType)
	loc = protowire.AppendBytes(loc, nil) // load_balancing_weight {} is 0
	loc = protowire.AppendTag(loc, 2, protowire.BytesType)
	loc = protowire.AppendBytes(loc, []byte{0x0a, 0x05}) // truncated
	b := protowire.AppendTag(out[0][:len(out[0]):len(out[0])], 2, protowire.BytesType)
	out = append(out, protowire.AppendBytes(b, loc))
	return out
}

// sameDecode fails unless decode and decodeMessage agree on raw.
func sameDecode(t *testing.T, raw []byte) {
	t.Helper()
	for _, leds := range []bool{false, true} {
		opts := registry.DecodeOptions{Switches: featuresWithLEDS(leds)}
		got, gotErr := decode(raw, opts)
		want, wantErr := decodeMessage(raw, opts)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("LEDS %v: decode error %v, one proto.Unmarshal %v", leds, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("LEDS %v: decode gave %+v, one proto.Unmarshal %+v", leds, got, want)
		}
	}
}

func TestDecodeFromBytesMatchesMessage(t *testing.T) {
	for _, raw := range splitSeeds(t) {
		sameDecode(t, raw)
	}
}

// FuzzDecodeFromBytes: reading endpoints from bytes gives what one proto.Unmarshal
// of the resource gives, result and error alike.
func FuzzDecodeFromBytes(f *testing.F) {
	for _, raw := range splitSeeds(f) {
		f.Add(raw)
	}
	f.Fuzz(sameDecode)
}

func featuresWithLEDS(on bool) features.Switches {
	return features.Switches{DisableEndpointFallback: !on}
}
