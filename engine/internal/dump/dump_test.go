package dump

import (
	"errors"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// TestConfig: a cached resource shows its version, bytes and time; an
// error its text, the failed version and, when known, the attempt's
// time.
func TestConfig(t *testing.T) {
	updated := time.Unix(100, 0)
	failed := time.Unix(200, 0)
	for _, tc := range []struct {
		name  string
		entry Entry
		want  *statuspb.ClientConfig_GenericXdsConfig
	}{
		{"requested", Entry{TypeURL: cds, Name: "c", Status: adminpb.ClientResourceStatus_REQUESTED},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cds, Name: "c", ClientStatus: adminpb.ClientResourceStatus_REQUESTED}},
		{"acked", Entry{TypeURL: cds, Name: "c", Status: adminpb.ClientResourceStatus_ACKED, Cached: true,
			Version: "v1", Raw: []byte{1, 2}, Updated: updated},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cds, Name: "c", ClientStatus: adminpb.ClientResourceStatus_ACKED,
				VersionInfo: "v1", XdsConfig: &anypb.Any{TypeUrl: cds, Value: []byte{1, 2}}, LastUpdated: timestamppb.New(updated)}},
		{"nacked but cached", Entry{TypeURL: cds, Name: "c", Status: adminpb.ClientResourceStatus_NACKED, Cached: true,
			Version: "v1", Raw: []byte{1}, Updated: updated, Err: errors.New("bad"), FailedVersion: "v2", FailedAt: failed},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cds, Name: "c", ClientStatus: adminpb.ClientResourceStatus_NACKED,
				VersionInfo: "v1", XdsConfig: &anypb.Any{TypeUrl: cds, Value: []byte{1}}, LastUpdated: timestamppb.New(updated),
				ErrorState: &adminpb.UpdateFailureState{Details: "bad", VersionInfo: "v2", LastUpdateAttempt: timestamppb.New(failed)}}},
		{"timer, no attempt time", Entry{TypeURL: cds, Name: "c", Status: adminpb.ClientResourceStatus_DOES_NOT_EXIST,
			Err: errors.New("not received")},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cds, Name: "c", ClientStatus: adminpb.ClientResourceStatus_DOES_NOT_EXIST,
				ErrorState: &adminpb.UpdateFailureState{Details: "not received"}}},
	} {
		if diff := cmp.Diff(tc.want, tc.entry.Config(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: Config() (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestClientConfig: entries sorted by type URL, then name; the node is a
// copy.
func TestClientConfig(t *testing.T) {
	node := &corepb.Node{Id: "n"}
	cc := ClientConfig(node, "xds:///t", []Entry{
		{TypeURL: cds, Name: "b"}, {TypeURL: "a.type/X", Name: "z"}, {TypeURL: cds, Name: "a"},
	})
	var got []string
	for _, g := range cc.GenericXdsConfigs {
		got = append(got, g.TypeUrl+" "+g.Name)
	}
	want := []string{"a.type/X z", cds + " a", cds + " b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if cc.ClientScope != "xds:///t" || !proto.Equal(cc.Node, node) || cc.Node == node {
		t.Errorf("scope %q, node %v (same pointer: %v); want the scope and a copy of the node", cc.ClientScope, cc.Node, cc.Node == node)
	}
}
