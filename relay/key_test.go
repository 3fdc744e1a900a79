package relay_test

import (
	"strings"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/relay"
)

func TestAggregation(t *testing.T) {
	md, _ := structpb.NewStruct(map[string]any{"team": "blue", "size": 3, "region": "eu"})
	client := &corepb.Node{Id: "client-1", Cluster: "frontend", Metadata: md}
	relayMD, _ := structpb.NewStruct(map[string]any{"region": "us"})
	relayNode := bootstrap.Node{ID: "relay", Cluster: "relays", Metadata: relayMD}
	for _, tc := range []struct {
		spec     string
		wantKey  string
		wantErr  string // substring; the error is INVALID_ARGUMENT
		wantNode bootstrap.Node
	}{
		{spec: "cluster", wantKey: "frontend", wantNode: bootstrap.Node{ID: "relay", Cluster: "frontend", Metadata: relayMD}},
		{spec: "id", wantKey: "client-1", wantNode: bootstrap.Node{ID: "client-1", Cluster: "relays", Metadata: relayMD}},
		{spec: "metadata:team", wantKey: "blue", wantNode: bootstrap.Node{ID: "relay", Cluster: "relays",
			Metadata: must(structpb.NewStruct(map[string]any{"region": "us", "team": "blue"}))}},
		{spec: "metadata:owner", wantErr: `node "client-1": metadata has no field "owner"`},
		{spec: "metadata:size", wantErr: `node "client-1": metadata field "size" is not a string`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			agg, err := relay.ParseAggregation(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			key, err := agg.Key(client)
			if tc.wantErr != "" {
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Key = %q, %v; want INVALID_ARGUMENT with %q", key, err, tc.wantErr)
				}
				return
			}
			if err != nil || key != tc.wantKey {
				t.Fatalf("Key = %q, %v; want %q", key, err, tc.wantKey)
			}
			before := proto.Clone(relayNode.Metadata)
			got := agg.Node(key, relayNode)
			if got.ID != tc.wantNode.ID || got.Cluster != tc.wantNode.Cluster || !proto.Equal(got.Metadata, tc.wantNode.Metadata) {
				t.Errorf("Node = %+v, want %+v", got, tc.wantNode)
			}
			if !proto.Equal(relayNode.Metadata, before) {
				t.Errorf("Node modified the relay's metadata: %v", relayNode.Metadata)
			}
		})
	}
}

func TestParseAggregationErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"":          `aggregation key "": want cluster, id or metadata:NAME`,
		"zone":      `aggregation key "zone": want cluster, id or metadata:NAME`,
		"metadata:": `aggregation key "metadata:": metadata needs a field name, as in metadata:NAME`,
	} {
		if _, err := relay.ParseAggregation(spec); err == nil || err.Error() != want {
			t.Errorf("ParseAggregation(%q) = %v, want %q", spec, err, want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
