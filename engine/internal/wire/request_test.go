package wire

import (
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// TestMarshalRequest checks that a request encoded with its names' kept
// encoding reads back as the request, through a sequence of requests on
// one stream: fresh names, an ACK with the same slice, equal names in a
// new slice, a NACK, other names, another type, none, and a name proto
// refuses.
func TestMarshalRequest(t *testing.T) {
	const cds, eds = "type.googleapis.com/envoy.config.cluster.v3.Cluster", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	names := []string{"a", "b", "xdstp://authority/envoy.config.cluster.v3.Cluster/c"}
	s := &stream{}
	for _, tc := range []struct {
		name    string
		req     *discoverypb.DiscoveryRequest
		wantErr bool
	}{
		{"first, with node", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, Node: &corepb.Node{Id: "n"}}, false},
		{"ACK, same slice", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, VersionInfo: "1", ResponseNonce: "n1"}, false},
		{"equal names, new slice", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: append([]string(nil), names...), VersionInfo: "1", ResponseNonce: "n2"}, false},
		{"NACK", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, VersionInfo: "1", ResponseNonce: "n3", ErrorDetail: &rpcstatus.Status{Code: 3, Message: "resource index 0: bad"}}, false},
		{"same length, other names", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: []string{"a", "b", "d"}, VersionInfo: "1"}, false},
		{"another type", &discoverypb.DiscoveryRequest{TypeUrl: eds, ResourceNames: []string{"e"}}, false},
		{"no names", &discoverypb.DiscoveryRequest{TypeUrl: cds, VersionInfo: "2", ResponseNonce: "n4"}, false},
		{"invalid UTF-8", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: []string{"ok", "bad\xff"}}, true},
		{"ACK after the refused names", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, VersionInfo: "3", ResponseNonce: "n5"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := proto.Clone(tc.req)
			b, err := s.marshalRequest(tc.req)
			if tc.wantErr {
				if err == nil {
					t.Fatal("marshalRequest accepted a name that is not UTF-8")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := &discoverypb.DiscoveryRequest{}
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("read back %v, want %v", got, want)
			}
			if !proto.Equal(tc.req, want) {
				t.Errorf("marshalRequest changed the request: %v", tc.req)
			}
		})
	}
}
