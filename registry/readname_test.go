package registry_test

import (
	"testing"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/internal/protoscan/protoscantest"
	"github.com/xdsengine/xdsengine/registry"
)

// readNameSeeds are Clusters, whose name is field 1.
func readNameSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, c := range []*clusterpb.Cluster{
		{Name: "c"},
		{Name: "cluster-1", ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
			EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{ServiceName: "eds-1", EdsConfig: &corepb.ConfigSource{
				ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}},
			ConnectTimeout: durationpb.New(1), LoadAssignment: &endpointpb.ClusterLoadAssignment{ClusterName: "inner"}},
		{ConnectTimeout: durationpb.New(1)},
	} {
		b, err := proto.Marshal(c)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// readName is ReadName against proto.Unmarshal: where the Cluster
// parses, a name ReadName finds is the Cluster's. ReadName judges no
// other field, so bytes proto.Unmarshal refuses are not compared.
var readName = protoscantest.Differential[string]{
	Fast: func(b []byte) (string, error) {
		name, ok := registry.ResourceType{NameField: 1}.ReadName(b)
		if !ok {
			return "", protoscantest.ErrDeclined
		}
		return string(name), nil
	},
	Reference: func(b []byte) (string, error) {
		var c clusterpb.Cluster
		err := proto.Unmarshal(b, &c)
		return c.GetName(), err
	},
	Partial: true,
}

func TestReadNameAgreesWithProto(t *testing.T) {
	readName.Test(t, (&clusterpb.Cluster{}).ProtoReflect().Descriptor(), readNameSeeds(t)...)
}

func FuzzReadName(f *testing.F) {
	readName.Fuzz(f, (&clusterpb.Cluster{}).ProtoReflect().Descriptor(), readNameSeeds(f)...)
}
