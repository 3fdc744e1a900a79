package wire

import (
	"bytes"
	"net"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/transport"
)

// TestMarshalRequest checks that a request encoded with its names' kept
// encoding reads back as the request, through a sequence of requests on
// one stream: fresh names, an ACK with the same slice, equal names in a
// new slice, a NACK, other names, another type, none, and a name proto
// refuses. It does so for a stream that takes one buffer and for one that
// takes buffers, which must get the kept encoding itself, the same bytes
// for every request with the same slice of names, never modified.
func TestMarshalRequest(t *testing.T) {
	const cds, eds = "type.googleapis.com/envoy.config.cluster.v3.Cluster", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	names := []string{"a", "b", "xdstp://authority/envoy.config.cluster.v3.Cluster/c"}
	for _, variant := range []struct {
		name    string
		buffers transport.BuffersSender
	}{
		{"one buffer", nil},
		{"buffers", discardBuffers{}},
	} {
		t.Run(variant.name, func(t *testing.T) {
			s := &stream{buffers: variant.buffers}
			type sent struct{ names, copied []byte }
			var sentNames []sent
			for _, tc := range []struct {
				name    string
				req     *discoverypb.DiscoveryRequest
				wantErr bool
				// sharesFirst: a stream that takes buffers gets the
				// names as the first request's buffer.
				sharesFirst bool
			}{
				{"first, with node", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, Node: &corepb.Node{Id: "n"}}, false, false},
				{"ACK, same slice", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, VersionInfo: "1", ResponseNonce: "n1"}, false, true},
				{"equal names, new slice", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: append([]string(nil), names...), VersionInfo: "1", ResponseNonce: "n2"}, false, false},
				{"NACK", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, VersionInfo: "1", ResponseNonce: "n3", ErrorDetail: &rpcstatus.Status{Code: 3, Message: "resource index 0: bad"}}, false, false},
				{"same length, other names", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: []string{"a", "b", "d"}, VersionInfo: "1"}, false, false},
				{"another type", &discoverypb.DiscoveryRequest{TypeUrl: eds, ResourceNames: []string{"e"}}, false, false},
				{"no names", &discoverypb.DiscoveryRequest{TypeUrl: cds, VersionInfo: "2", ResponseNonce: "n4"}, false, false},
				{"invalid UTF-8", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: []string{"ok", "bad\xff"}}, true, false},
				{"ACK after the refused names", &discoverypb.DiscoveryRequest{TypeUrl: cds, ResourceNames: names, VersionInfo: "3", ResponseNonce: "n5"}, false, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					want := proto.Clone(tc.req)
					head, namesBuf, err := s.marshalRequest(tc.req)
					if tc.wantErr {
						if err == nil {
							t.Fatal("marshalRequest accepted a name that is not UTF-8")
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if withNames := len(tc.req.ResourceNames) > 0; (namesBuf != nil) != (withNames && variant.buffers != nil) {
						t.Fatalf("names as a buffer of their own: %t, want %t", namesBuf != nil, withNames && variant.buffers != nil)
					}
					if namesBuf != nil {
						if tc.sharesFirst && &namesBuf[0] != &sentNames[0].names[0] {
							t.Error("an ACK with the same slice of names got a new encoding of them")
						}
						sentNames = append(sentNames, sent{namesBuf, bytes.Clone(namesBuf)})
					}
					got := &discoverypb.DiscoveryRequest{}
					if err := proto.Unmarshal(append(bytes.Clone(head), namesBuf...), got); err != nil {
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
			for i, sn := range sentNames {
				if !bytes.Equal(sn.names, sn.copied) {
					t.Errorf("the names of request %d were modified after it was encoded", i)
				}
			}
		})
	}
}

type discardBuffers struct{}

func (discardBuffers) SendBuffers(net.Buffers) error { return nil }
