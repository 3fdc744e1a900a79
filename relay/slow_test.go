package relay_test

import (
	"context"
	"errors"
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"

	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// TestSlowClient: a client that does not answer holds one response per
// type, however many versions pass meanwhile; when it asks again it gets
// the latest, and only that.
func TestSlowClient(t *testing.T) {
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	r := newRelay(t, up, relaytest.Options{}, nil)
	pace := watch(t, client(t, r, relaytest.BootstrapOptions{NodeID: "pace", Cluster: "blue"}), cds.TypeURL, "cluster-1")
	pace.waitFor(t, "the cluster", edsName("eds-1"))
	names := []string{"cluster-1"}

	sotw := openSotw(t, r.Addr())
	sotw.request(t, &discoverypb.DiscoveryRequest{Node: node("slow-sotw", "blue"), TypeUrl: cds.TypeURL, ResourceNames: names})
	first := sotw.next(t)
	delta := openDelta(t, r.Addr())
	delta.request(t, &discoverypb.DeltaDiscoveryRequest{Node: node("slow-delta", "blue"), TypeUrl: cds.TypeURL, ResourceNamesSubscribe: names})
	firstDelta := delta.next(t)

	for _, eds := range []string{"eds-2", "eds-3", "eds-4"} {
		up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", eds)))
		pace.waitFor(t, "the update", edsName(eds))
	}
	sotw.none(t, quiet)
	delta.none(t, quiet)

	sotw.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: names,
		VersionInfo: first.GetVersionInfo(), ResponseNonce: first.GetNonce()})
	if got := clusterEDS(t, sotw.next(t).GetResources()[0]); got != "eds-4" {
		t.Errorf("the slow State of the World client got %q, want the latest, eds-4", got)
	}
	delta.request(t, &discoverypb.DeltaDiscoveryRequest{TypeUrl: cds.TypeURL, ResponseNonce: firstDelta.GetNonce()})
	if got := clusterEDS(t, delta.next(t).GetResources()[0].GetResource()); got != "eds-4" {
		t.Errorf("the slow incremental client got %q, want the latest, eds-4", got)
	}
	sotw.none(t, quiet)
	delta.none(t, quiet)
}

// TestFetch: REST clients poll: Fetch subscribes upstream, answers, and a
// poll at the current version is skipped.
func TestFetch(t *testing.T) {
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	r := newRelay(t, up, relaytest.Options{}, nil)
	req := &discoverypb.DiscoveryRequest{Node: node("rest", "blue"), TypeUrl: cds.TypeURL, ResourceNames: []string{"cluster-1"}}
	var resp *discoverypb.DiscoveryResponse
	waitUntil(t, "a fetch with the cluster", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		defer cancel()
		got, err := r.Relay().Fetch(ctx, req)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		resp, err = got.GetDiscoveryResponse()
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.GetResources()) == 1
	})
	if got := clusterEDS(t, resp.GetResources()[0]); got != "eds-1" {
		t.Fatalf("fetched %q, want eds-1", got)
	}
	again := &discoverypb.DiscoveryRequest{Node: req.Node, TypeUrl: cds.TypeURL, ResourceNames: req.ResourceNames, VersionInfo: resp.GetVersionInfo()}
	if _, err := r.Relay().Fetch(context.Background(), again); !errors.As(err, new(*types.SkipFetchError)) {
		t.Fatalf("Fetch at the current version: %v, want a SkipFetchError", err)
	}
}
