package relay_test

import (
	"testing"
	"unsafe"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"

	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
)

// TestMarshalledOnce: through the cache interface the server uses, two
// State of the World clients and an incremental one are sent the very same
// bytes of a resource version: it was serialized once, not per client.
func TestMarshalledOnce(t *testing.T) {
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	r := newRelay(t, up, relaytest.Options{}, nil)
	watch(t, client(t, r, relaytest.BootstrapOptions{NodeID: "warm", Cluster: "blue"}), cds.TypeURL, "cluster-1").
		waitFor(t, "the cluster", edsName("eds-1"))
	names := []string{"cluster-1"}

	var served [][]byte
	for i := range 2 {
		ch := make(chan cache.Response, 1)
		req := &discoverypb.DiscoveryRequest{Node: node("sotw", "blue"), TypeUrl: cds.TypeURL, ResourceNames: names}
		cancel, err := r.Relay().CreateWatch(req, stream.NewSotwSubscription(names, false), ch)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (<-ch).GetDiscoveryResponse()
		cancel()
		if err != nil || len(resp.GetResources()) != 1 {
			t.Fatalf("client %d: %v, %v", i, resp, err)
		}
		served = append(served, resp.GetResources()[0].GetValue())
	}
	dch := make(chan cache.DeltaResponse, 1)
	dreq := &discoverypb.DeltaDiscoveryRequest{Node: node("delta", "blue"), TypeUrl: cds.TypeURL, ResourceNamesSubscribe: names}
	cancel, err := r.Relay().CreateDeltaWatch(dreq, stream.NewDeltaSubscription(names, nil, nil, false), dch)
	if err != nil {
		t.Fatal(err)
	}
	dresp, err := (<-dch).GetDeltaDiscoveryResponse()
	cancel()
	if err != nil || len(dresp.GetResources()) != 1 {
		t.Fatalf("delta client: %v, %v", dresp, err)
	}
	served = append(served, dresp.GetResources()[0].GetResource().GetValue())

	for i, b := range served[1:] {
		if unsafe.SliceData(b) != unsafe.SliceData(served[0]) {
			t.Errorf("client %d was sent bytes of their own (%p, first client %p): the resource was serialized again", i+1, unsafe.SliceData(b), unsafe.SliceData(served[0]))
		}
	}
}
