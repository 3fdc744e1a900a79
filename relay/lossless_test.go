package relay_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// istioProxyless is what istiod sends a proxyless gRPC client for n
// services: per service an API listener "<host>:80" on RDS, its route
// configuration, an "outbound|80||<host>" EDS cluster with the metadata,
// timeouts and circuit breakers istiod sets, and its endpoints by
// locality with metadata. It returns the resources by type URL and name.
func istioProxyless(n int) map[string]map[string]proto.Message {
	out := map[string]map[string]proto.Message{lds.TypeURL: {}, rds.TypeURL: {}, cds.TypeURL: {}, eds.TypeURL: {}}
	for i := range n {
		host := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%7)
		listener, cluster := host+":80", "outbound|80||"+host
		out[lds.TypeURL][listener] = xdstest.Listener(listener, listener)
		route := xdstest.RouteConfig(listener, cluster)
		route.VirtualHosts[0].Domains = []string{host, host + ":80", fmt.Sprintf("svc-%d", i)}
		route.VirtualHosts[0].Routes[0].GetRoute().Timeout = durationpb.New(0)
		out[rds.TypeURL][listener] = route
		c := xdstest.Cluster(cluster, cluster)
		c.ConnectTimeout = durationpb.New(10 * time.Second)
		c.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{
			MaxConnections: wrapperspb.UInt32(4294967295), MaxRequests: wrapperspb.UInt32(4294967295),
			MaxRetries: wrapperspb.UInt32(4294967295),
		}}}
		md, _ := structpb.NewStruct(map[string]any{"services": []any{map[string]any{"host": host, "name": fmt.Sprintf("svc-%d", i), "namespace": fmt.Sprintf("ns-%d", i%7)}}})
		c.Metadata = &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": md}}
		out[cds.TypeURL][cluster] = c
		cla := xdstest.ClusterLoadAssignment(cluster,
			xdstest.Locality{Zone: "zone-a", Endpoints: []string{fmt.Sprintf("10.0.%d.1:8080", i%250), fmt.Sprintf("10.0.%d.2:8080", i%250)}},
			xdstest.Locality{Zone: "zone-b", Priority: 1, Endpoints: []string{fmt.Sprintf("10.1.%d.1:8080", i%250)}})
		for _, lle := range cla.Endpoints {
			lle.Locality.SubZone = "rack-1"
			for _, ep := range lle.LbEndpoints {
				emd, _ := structpb.NewStruct(map[string]any{"workload": fmt.Sprintf("svc-%d-v1;ns-%d;svc-%d;v1;cluster-1", i, i%7, i)})
				ep.Metadata = &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": emd}}
				ep.LoadBalancingWeight = wrapperspb.UInt32(1)
			}
		}
		out[eds.TypeURL][cluster] = cla
	}
	return out
}

func setAll(up *xdstest.Server, byType map[string]map[string]proto.Message) {
	var all []xdstest.Resource
	for _, byName := range byType {
		for name, m := range byName {
			all = append(all, xdstest.R(name, m))
		}
	}
	up.Set(all...)
}

func names(byName map[string]proto.Message) []string {
	out := make([]string, 0, len(byName))
	for name := range byName {
		out = append(out, name)
	}
	return out
}

// sameBytes reports how served differs from what the upstream serializes
// of want, "" if in nothing: same message, same bytes.
func sameBytes(want proto.Message, served []byte) string {
	wantBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		return err.Error()
	}
	if bytes.Equal(wantBytes, served) {
		return ""
	}
	got := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(served, got); err != nil {
		return "served bytes do not parse: " + err.Error()
	}
	if !proto.Equal(want, got) {
		return fmt.Sprintf("served %v, want %v", got, want)
	}
	return "same message, other bytes"
}

// TestLossless: an istiod-shaped configuration of 50 services reaches
// State of the World and incremental clients exactly as the upstream
// serves it, every field of every resource.
func TestLossless(t *testing.T) {
	mesh := istioProxyless(50)
	up := newUpstream(t, "upstream")
	setAll(up, mesh)
	r := newRelay(t, up, relaytest.Options{}, nil)

	for typeURL, byName := range mesh {
		t.Run(typeURL[len("type.googleapis.com/"):], func(t *testing.T) {
			got := map[string][]byte{}
			sotw := openSotw(t, r.Addr())
			sotw.request(t, &discoverypb.DiscoveryRequest{Node: node("sotw", "blue"), TypeUrl: typeURL, ResourceNames: names(byName)})
			for len(got) < len(byName) {
				resp := sotw.next(t)
				for _, a := range resp.GetResources() {
					got[nameOf(t, typeURL, a.GetValue())] = a.GetValue()
				}
				sotw.request(t, &discoverypb.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names(byName),
					VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()})
			}
			gotDelta := map[string][]byte{}
			delta := openDelta(t, r.Addr())
			delta.request(t, &discoverypb.DeltaDiscoveryRequest{Node: node("delta", "blue"), TypeUrl: typeURL, ResourceNamesSubscribe: names(byName)})
			for len(gotDelta) < len(byName) {
				resp := delta.next(t)
				for _, res := range resp.GetResources() {
					gotDelta[res.GetName()] = res.GetResource().GetValue()
				}
				delta.request(t, &discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: resp.GetNonce()})
			}
			for name, want := range byName {
				if diff := sameBytes(want, got[name]); diff != "" {
					t.Errorf("State of the World, %s: %s", name, diff)
				}
				if diff := sameBytes(want, gotDelta[name]); diff != "" {
					t.Errorf("incremental, %s: %s", name, diff)
				}
			}
		})
	}
}

// nameOf reads a served resource's name.
func nameOf(t *testing.T, typeURL string, b []byte) string {
	t.Helper()
	m, err := (&anypb.Any{TypeUrl: typeURL, Value: b}).UnmarshalNew()
	if err != nil {
		t.Fatal(err)
	}
	switch v := m.(type) {
	case interface{ GetClusterName() string }:
		return v.GetClusterName()
	case interface{ GetName() string }:
		return v.GetName()
	}
	t.Fatalf("no name in a %s", typeURL)
	return ""
}
