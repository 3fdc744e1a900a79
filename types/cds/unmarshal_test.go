package cds

import (
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

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
	}
}

// FuzzUnmarshalCluster: unmarshalCluster gives what proto.Unmarshal
// gives, and the same error, whatever the bytes; one target is reset and
// reused from call to call, as the decoder does.
func FuzzUnmarshalCluster(f *testing.F) {
	for _, b := range unmarshalSeeds(f) {
		f.Add(b)
	}
	target := &decodeTarget{}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want clusterpb.Cluster
		err := target.unmarshalCluster(b)
		defer target.reset()
		werr := proto.Unmarshal(b, &want)
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("error %v, proto.Unmarshal's %v", err, werr)
		}
		if err == nil && !proto.Equal(&target.pb, &want) {
			t.Fatalf("got %v\nwant (proto.Unmarshal) %v", &target.pb, &want)
		}
	})
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
		{"connect_timeout and circuit_breakers", seeds[2], true, false},
		{"self config source", seeds[3], true, false},
		{"every field twice", seeds[7], false, false},
		{"type, then cluster_type", seeds[9], false, false},
		{"name not UTF-8", seeds[11], false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := splitCluster(tc.raw, nil)
			if ok != tc.split || (ok && (len(h.rest) == 0) != tc.restless) {
				t.Errorf("split %v with %d bytes left, want split %v, nothing left %v", ok, len(h.rest), tc.split, tc.restless)
			}
		})
	}
}
