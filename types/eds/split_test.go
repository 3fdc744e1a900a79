package eds

import (
	"fmt"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/protoscan/protoscantest"
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

// decodeOutcome is what decoding a resource gives, error included.
type decodeOutcome struct {
	res registry.DecodeResult
	err string
}

func outcome(res registry.DecodeResult, err error) decodeOutcome {
	o := decodeOutcome{res: res}
	if err != nil {
		o.err = err.Error()
	}
	return o
}

// fromBytes: decoding with the endpoints read from bytes (splitAssignment,
// then convert) gives what one proto.Unmarshal of the resource gives
// (decodeMessage), result and error alike; where a locality's endpoint
// does not parse, decode falls back to decodeMessage.
func fromBytes(leds bool) protoscantest.Differential[decodeOutcome] {
	opts := registry.DecodeOptions{Switches: featuresWithLEDS(leds)}
	return protoscantest.Differential[decodeOutcome]{
		Fast: func(raw []byte) (decodeOutcome, error) {
			cla, locs, ok := splitAssignment(raw)
			if !ok {
				return decodeOutcome{}, protoscantest.ErrDeclined
			}
			res, err, ok := convert(raw, cla, locs, opts)
			if !ok {
				return decodeOutcome{}, protoscantest.ErrDeclined
			}
			return outcome(res, err), nil
		},
		Reference: func(raw []byte) (decodeOutcome, error) { return outcome(decodeMessage(raw, opts)), nil },
	}
}

var claDescriptor = (&endpointpb.ClusterLoadAssignment{}).ProtoReflect().Descriptor()

func TestDecodeFromBytesMatchesMessage(t *testing.T) {
	for _, leds := range []bool{false, true} {
		t.Run(fmt.Sprintf("LEDS %v", leds), func(t *testing.T) {
			fromBytes(leds).Test(t, claDescriptor, splitSeeds(t)...)
		})
	}
}

// FuzzDecodeFromBytes: decode, the fast path with its fallback, gives
// what decodeMessage gives, with LEDS off and on.
func FuzzDecodeFromBytes(f *testing.F) {
	both := func(decode func([]byte, registry.DecodeOptions) (registry.DecodeResult, error)) func([]byte) ([2]decodeOutcome, error) {
		return func(raw []byte) ([2]decodeOutcome, error) {
			var out [2]decodeOutcome
			for i, leds := range []bool{false, true} {
				out[i] = outcome(decode(raw, registry.DecodeOptions{Switches: featuresWithLEDS(leds)}))
			}
			return out, nil
		}
	}
	d := protoscantest.Differential[[2]decodeOutcome]{Fast: both(decode), Reference: both(decodeMessage)}
	d.Fuzz(f, claDescriptor, splitSeeds(f)...)
}

func featuresWithLEDS(on bool) features.Switches {
	return features.Switches{DisableEndpointFallback: !on}
}
