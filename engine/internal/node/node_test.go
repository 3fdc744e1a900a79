package node

import (
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBuild(t *testing.T) {
	meta, err := structpb.NewStruct(map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	base := []string{clientFeatureNoOverprovisioning, clientFeatureResourceInSotW}
	for _, tc := range []struct {
		name     string
		n        bootstrap.Node
		features []string
		want     *corepb.Node
	}{
		{"bare", bootstrap.Node{ID: "id"}, nil, &corepb.Node{Id: "id", UserAgentName: "ua",
			UserAgentVersionType: &corepb.Node_UserAgentVersion{UserAgentVersion: "v1"}, ClientFeatures: base}},
		{"full, features without repeats", bootstrap.Node{ID: "id", Cluster: "c", Metadata: meta,
			Locality: bootstrap.Locality{Region: "r", Zone: "z", SubZone: "s"}},
			[]string{"f1", clientFeatureResourceInSotW, "f2", "f1"},
			&corepb.Node{Id: "id", Cluster: "c", Metadata: meta, UserAgentName: "ua",
				UserAgentVersionType: &corepb.Node_UserAgentVersion{UserAgentVersion: "v1"},
				Locality:             &corepb.Locality{Region: "r", Zone: "z", SubZone: "s"},
				ClientFeatures:       append(base, "f1", "f2")}},
	} {
		if diff := cmp.Diff(tc.want, Build(tc.n, "ua", "v1", tc.features), protocmp.Transform()); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
		}
	}
}
