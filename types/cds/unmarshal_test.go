package cds

import (
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/internal/protoscan/protoscantest"
	"github.com/xdsengine/xdsengine/xdstest"
)

// unmarshalSeeds are Clusters of the usual shape and around it.
func unmarshalSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	m := func(c *clusterpb.Cluster) []byte {
		b, err := proto.Marshal(c)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(tag(num, protowire.BytesType), v)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(num, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	usual := xdstest.Cluster("c", "eds")
	versioned := xdstest.Cluster("c", "eds")
	versioned.EdsClusterConfig.EdsConfig = &corepb.ConfigSource{
		ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}},
		ResourceApiVersion:    corepb.ApiVersion_V3,
	}
	rich := xdstest.Cluster("c", "")
	rich.ConnectTimeout = durationpb.New(time.Second)
	rich.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{}}}
	limits := xdstest.Cluster("c", "eds")
	limits.ConnectTimeout = durationpb.New(time.Second)
	limits.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(100)}}}
	limits.OutlierDetection = &clusterpb.OutlierDetection{Interval: durationpb.New(10 * time.Second), MaxEjectionPercent: wrapperspb.UInt32(20)}
	u32 := wrapperspb.UInt32
	full := xdstest.Cluster("c", "eds")
	full.ConnectTimeout = &durationpb.Duration{Seconds: -3, Nanos: -5}
	full.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{
		{Priority: corepb.RoutingPriority_HIGH, MaxConnections: u32(1), MaxPendingRequests: u32(2), MaxRequests: u32(3), MaxRetries: u32(4), TrackRemaining: true, MaxConnectionPools: u32(5)},
		{}, {MaxRequests: u32(0)}, {Priority: 7},
	}}
	full.OutlierDetection = &clusterpb.OutlierDetection{
		Consecutive_5Xx: u32(1), Interval: durationpb.New(time.Second), BaseEjectionTime: durationpb.New(2 * time.Second),
		MaxEjectionPercent: u32(4), EnforcingConsecutive_5Xx: u32(5), EnforcingSuccessRate: u32(6), SuccessRateMinimumHosts: u32(7),
		SuccessRateRequestVolume: u32(8), SuccessRateStdevFactor: u32(9), ConsecutiveGatewayFailure: u32(10),
		EnforcingConsecutiveGatewayFailure: u32(11), SplitExternalLocalOriginErrors: true, ConsecutiveLocalOriginFailure: u32(13),
		EnforcingConsecutiveLocalOriginFailure: u32(14), EnforcingLocalOriginSuccessRate: u32(15), FailurePercentageThreshold: u32(16),
		EnforcingFailurePercentage: u32(17), EnforcingFailurePercentageLocalOrigin: u32(18), FailurePercentageMinimumHosts: u32(19),
		FailurePercentageRequestVolume: u32(20), MaxEjectionTime: durationpb.New(time.Minute), MaxEjectionTimeJitter: &durationpb.Duration{},
		SuccessfulActiveHealthCheckUnejectHost: wrapperspb.Bool(true), AlwaysEjectOneHost: wrapperspb.Bool(false), DetectDegradedHosts: wrapperspb.Bool(true),
	}
	monitors := xdstest.Cluster("c", "eds")
	monitors.OutlierDetection = &clusterpb.OutlierDetection{Monitors: []*corepb.TypedExtensionConfig{{Name: "m"}}}
	budget := xdstest.Cluster("c", "eds")
	budget.CircuitBreakers = &clusterpb.CircuitBreakers{
		Thresholds:        []*clusterpb.CircuitBreakers_Thresholds{{RetryBudget: &clusterpb.CircuitBreakers_Thresholds_RetryBudget{}}},
		PerHostThresholds: []*clusterpb.CircuitBreakers_Thresholds{{}},
	}
	five := xdstest.Cluster("c", "eds")
	five.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{}, {}, {}, {}, {MaxRetries: u32(9)}}}
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(tag(num, protowire.BytesType), v)
	}
	self := xdstest.Cluster("c", "eds")
	self.EdsClusterConfig.EdsConfig = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}}
	aggregate := &clusterpb.Cluster{Name: "agg", ClusterDiscoveryType: &clusterpb.Cluster_ClusterType{ClusterType: &clusterpb.Cluster_CustomClusterType{Name: "x"}}}
	return [][]byte{
		m(usual), m(versioned), m(rich), m(self), m(aggregate), nil,
		m(&clusterpb.Cluster{EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{}}),
		cat(m(usual), m(usual)),                         // every field twice
		cat(m(usual), varint(2, 1)),                     // type again, another value
		cat(varint(2, 3), m(aggregate)),                 // type, then cluster_type
		cat(m(aggregate), varint(2, 3)),                 // cluster_type, then type
		cat(str(1, "\xff"), varint(2, 3)),               // a name that is not UTF-8
		cat(varint(1, 5), varint(2, 3)),                 // name as a varint
		cat(str(2, "x"), str(1, "n")),                   // type as bytes
		cat(varint(2, 1<<40), varint(6, 1<<33+2)),       // enums beyond int32
		cat(str(1, "n"), tag(99, protowire.VarintType)), // cut short
		cat(str(1, "n"), str(1000, "unknown"), str(7, "not a message")),
		cat(str(1, "n"), protowire.AppendBytes(tag(3, protowire.BytesType), cat(str(2, "\xfe")))),
		cat(str(1, "n"), protowire.AppendBytes(tag(3, protowire.BytesType), cat(
			protowire.AppendBytes(tag(1, protowire.BytesType), cat(protowire.AppendBytes(tag(3, protowire.BytesType), str(1, "inside ads")))),
			str(2, "s")))),
		cat(str(1, "n"), protowire.AppendBytes(tag(3, protowire.BytesType), cat(
			protowire.AppendBytes(tag(1, protowire.BytesType), cat(str(3, ""), str(3, ""))), str(2, "s"), str(2, "t")))),
		// The limits: usual, every field, and around them.
		m(limits), m(full), m(monitors), m(budget), m(five),
		cat(m(limits), m(limits)),                                                         // every limit twice
		cat(m(usual), varint(4, 1), varint(10, 1), varint(19, 1)),                         // limits as varints
		cat(m(usual), bytesField(4, cat(varint(1, 1), varint(1, 2)))),                     // seconds twice
		cat(m(usual), bytesField(4, cat(varint(2, 1<<40), varint(1, 1<<63)))),             // nanos beyond int32, seconds negative
		cat(m(usual), bytesField(4, cat(str(1, "x")))),                                    // seconds as bytes
		cat(m(usual), bytesField(4, cat(varint(3, 1)))),                                   // an unknown field
		cat(m(usual), bytesField(19, bytesField(4, cat(varint(1, 1<<33), varint(1, 2))))), // a wrapper's value twice
		cat(m(usual), bytesField(19, bytesField(4, varint(2, 1)))),                        // a wrapper's unknown field
		cat(m(usual), bytesField(19, bytesField(2, nil))),                                 // an empty duration
		cat(m(usual), bytesField(19, cat(varint(12, 2), bytesField(23, varint(1, 3))))),   // bools beyond 1
		cat(m(usual), bytesField(19, cat(bytesField(1, nil), bytesField(1, nil)))),        // a field twice
		cat(m(usual), bytesField(19, bytesField(12, nil))),                                // a bool as bytes
		cat(m(usual), bytesField(10, bytesField(1, cat(varint(1, 1<<35), varint(6, 1))))), // priority beyond int32
		cat(m(usual), bytesField(10, bytesField(1, cat(bytesField(4, nil), bytesField(4, nil))))),
		cat(m(usual), bytesField(10, bytesField(1, varint(4, 1)))), // a limit as a varint
		cat(m(usual), bytesField(10, bytesField(1, tag(3, protowire.BytesType)))),
		// A message field twice merges: the value of the first stays.
		cat(m(usual), bytesField(10, bytesField(1, cat(bytesField(4, varint(1, 5)), bytesField(4, nil))))),
		cat(m(usual), bytesField(19, cat(bytesField(1, varint(1, 5)), bytesField(1, nil)))),
		cat(m(usual), bytesField(19, cat(bytesField(2, varint(1, 5)), bytesField(2, varint(2, 7))))),
		cat(m(usual), bytesField(4, varint(1, 5)), bytesField(4, varint(2, 7))),
	}
}

// unmarshalDifferential: unmarshalCluster gives what proto.Unmarshal
// gives, and the same error, whatever the bytes; one target is reset and
// reused from call to call, as the decoder does.
func unmarshalDifferential() protoscantest.Differential[*clusterpb.Cluster] {
	target := &decodeTarget{}
	return protoscantest.Differential[*clusterpb.Cluster]{
		Fast: func(b []byte) (*clusterpb.Cluster, error) {
			target.reset()
			err := target.unmarshalCluster(b)
			return &target.pb, err
		},
		Reference: func(b []byte) (*clusterpb.Cluster, error) {
			var want clusterpb.Cluster
			err := proto.Unmarshal(b, &want)
			return &want, err
		},
		Equal:     func(fast, ref *clusterpb.Cluster) bool { return proto.Equal(fast, ref) },
		SameError: true,
	}
}

var clusterDescriptor = (&clusterpb.Cluster{}).ProtoReflect().Descriptor()

// TestUnmarshalClusterAgreesWithProto runs the seeds and their shared
// mutations (protoscantest.Mutate) through unmarshalDifferential.
func TestUnmarshalClusterAgreesWithProto(t *testing.T) {
	unmarshalDifferential().Test(t, clusterDescriptor, unmarshalSeeds(t)...)
}

// FuzzUnmarshalCluster is unmarshalDifferential on any bytes, from the
// seeds and their mutations.
func FuzzUnmarshalCluster(f *testing.F) {
	unmarshalDifferential().Fuzz(f, clusterDescriptor, unmarshalSeeds(f)...)
}

// TestUnmarshalClusterReadsUsualShape: the Clusters every EDS setup sends
// take the fast path, whole, so that proto.Unmarshal is not called; the
// others fall back to it for the whole or the rest.
func TestUnmarshalClusterReadsUsualShape(t *testing.T) {
	seeds := unmarshalSeeds(t)
	for _, tc := range []struct {
		name     string
		raw      []byte
		split    bool // read by splitCluster
		restless bool // nothing left for proto.Unmarshal
	}{
		{"usual", seeds[0], true, true},
		{"with resource_api_version", seeds[1], true, true},
		{"connect_timeout and circuit_breakers", seeds[2], true, true},
		{"limits", seeds[20], true, true},
		{"every limit field", seeds[21], true, true},
		{"outlier detection monitors", seeds[22], true, false},
		{"retry budget, per host thresholds", seeds[23], true, false},
		{"five thresholds", seeds[24], true, false},
		{"every limit twice", seeds[25], false, false},
		{"a wrapper's value twice", seeds[31], true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h clusterFields
			ok := (&decodeTarget{}).split(tc.raw, &h)
			if ok != tc.split || (ok && (len(h.rest) == 0) != tc.restless) {
				t.Errorf("split %v with %d bytes left, want split %v, nothing left %v", ok, len(h.rest), tc.split, tc.restless)
			}
		})
	}
}
