package engine

import (
	"errors"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestSnapshotConfig: a cached resource shows its version, bytes and time; an
// error its text, the failed version and, when known, the attempt's
// time.
func TestSnapshotConfig(t *testing.T) {
	updated := time.Unix(100, 0)
	failed := time.Unix(200, 0)
	for _, tc := range []struct {
		name  string
		entry entrySnapshot
		want  *statuspb.ClientConfig_GenericXdsConfig
	}{
		{"requested", entrySnapshot{TypeURL: cdsURL, Name: "c", Status: adminpb.ClientResourceStatus_REQUESTED},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cdsURL, Name: "c", ClientStatus: adminpb.ClientResourceStatus_REQUESTED}},
		{"acked", entrySnapshot{TypeURL: cdsURL, Name: "c", Status: adminpb.ClientResourceStatus_ACKED, Cached: true,
			Version: "v1", Raw: []byte{1, 2}, Updated: updated},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cdsURL, Name: "c", ClientStatus: adminpb.ClientResourceStatus_ACKED,
				VersionInfo: "v1", XdsConfig: &anypb.Any{TypeUrl: cdsURL, Value: []byte{1, 2}}, LastUpdated: timestamppb.New(updated)}},
		{"nacked but cached", entrySnapshot{TypeURL: cdsURL, Name: "c", Status: adminpb.ClientResourceStatus_NACKED, Cached: true,
			Version: "v1", Raw: []byte{1}, Updated: updated, Err: errors.New("bad"), FailedVersion: "v2", FailedAt: failed},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cdsURL, Name: "c", ClientStatus: adminpb.ClientResourceStatus_NACKED,
				VersionInfo: "v1", XdsConfig: &anypb.Any{TypeUrl: cdsURL, Value: []byte{1}}, LastUpdated: timestamppb.New(updated),
				ErrorState: &adminpb.UpdateFailureState{Details: "bad", VersionInfo: "v2", LastUpdateAttempt: timestamppb.New(failed)}}},
		{"timer, no attempt time", entrySnapshot{TypeURL: cdsURL, Name: "c", Status: adminpb.ClientResourceStatus_DOES_NOT_EXIST,
			Err: errors.New("not received")},
			&statuspb.ClientConfig_GenericXdsConfig{TypeUrl: cdsURL, Name: "c", ClientStatus: adminpb.ClientResourceStatus_DOES_NOT_EXIST,
				ErrorState: &adminpb.UpdateFailureState{Details: "not received"}}},
	} {
		if diff := cmp.Diff(tc.want, tc.entry.config(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: Config() (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestSnapshotClientConfig: entries sorted by type URL, then name; the node is a
// copy.
func TestSnapshotClientConfig(t *testing.T) {
	node := &corepb.Node{Id: "n"}
	cc := clientConfig(node, "xds:///t", []entrySnapshot{
		{TypeURL: cdsURL, Name: "b"}, {TypeURL: "a.type/X", Name: "z"}, {TypeURL: cdsURL, Name: "a"},
	})
	var got []string
	for _, g := range cc.GenericXdsConfigs {
		got = append(got, g.TypeUrl+" "+g.Name)
	}
	want := []string{"a.type/X z", cdsURL + " a", cdsURL + " b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if cc.ClientScope != "xds:///t" || !proto.Equal(cc.Node, node) || cc.Node == node {
		t.Errorf("scope %q, node %v (same pointer: %v); want the scope and a copy of the node", cc.ClientScope, cc.Node, cc.Node == node)
	}
}
