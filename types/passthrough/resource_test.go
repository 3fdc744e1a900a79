package passthrough_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/passthrough"
)

func decode(t *testing.T, typeURL string, raw []byte, opts registry.DecodeOptions) *passthrough.Resource {
	t.Helper()
	res, err := mustType(t, typeURL).Decode(raw, opts)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return res.Resource.(*passthrough.Resource)
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// outOfOrder is a STATIC cluster serialized with its fields in an order
// of its own (connect_timeout, name, type), as another implementation
// may: the same message as blackHoleCluster, other bytes.
func outOfOrder(t *testing.T) []byte {
	timeout := marshal(t, durationpb.New(10*time.Second))
	raw := protowire.AppendTag(nil, 4, protowire.BytesType)
	raw = protowire.AppendBytes(raw, timeout)
	raw = protowire.AppendTag(raw, 1, protowire.BytesType)
	raw = protowire.AppendString(raw, "BlackHoleCluster")
	raw = protowire.AppendTag(raw, 2, protowire.VarintType)
	return protowire.AppendVarint(raw, uint64(clusterpb.Cluster_STATIC))
}

func TestResource(t *testing.T) {
	raw := outOfOrder(t)
	r := decode(t, passthrough.ClusterTypeURL, raw, registry.DecodeOptions{})
	if !proto.Equal(r.Message(), blackHoleCluster()) {
		t.Fatalf("Message = %v, want the BlackHoleCluster", r.Message())
	}
	if canonical := marshal(t, r.Message()); bytes.Equal(canonical, raw) {
		t.Fatal("the test's bytes are canonical; they must differ from a marshaling of the message")
	}
	copyOfMsg := r.Proto().(*clusterpb.Cluster)
	copyOfMsg.Name = "changed"
	for _, c := range []struct {
		what string
		got  any
		want any
	}{
		{"Name", r.Name(), "BlackHoleCluster"},
		{"TypeURL", r.TypeURL(), passthrough.ClusterTypeURL},
		{"Raw is the bytes sent", bytes.Equal(r.Raw(), raw), true},
		{"Proto is a copy", r.Message().(*clusterpb.Cluster).GetName(), "BlackHoleCluster"},
		{"String", r.String(), `Cluster "BlackHoleCluster" (24 bytes)`},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestEqual(t *testing.T) {
	raw := marshal(t, blackHoleCluster())
	a := decode(t, passthrough.ClusterTypeURL, raw, registry.DecodeOptions{})
	var nilResource *passthrough.Resource
	for _, tc := range []struct {
		name  string
		other registry.Resource
		want  bool
	}{
		{"same bytes", decode(t, passthrough.ClusterTypeURL, raw, registry.DecodeOptions{}), true},
		{"the same message as other bytes", decode(t, passthrough.ClusterTypeURL, outOfOrder(t), registry.DecodeOptions{}), false},
		{"another cluster", decode(t, passthrough.ClusterTypeURL, marshal(t, passthroughCluster()), registry.DecodeOptions{}), false},
		{"same bytes, another type", decode(t, passthrough.ClusterLoadAssignmentTypeURL, marshal(t, blackHoleCluster()), registry.DecodeOptions{}), false},
		{"nil of the type", nilResource, false},
		{"another resource type", &struct{}{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Equal(tc.other); got != tc.want {
				t.Errorf("Equal = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestVerbatim hands decoded resources to go-control-plane's LinearCache,
// as a relay does, and reads what its responses carry: the bytes the
// upstream server sent, not a new marshaling of the message.
func TestVerbatim(t *testing.T) {
	raw := outOfOrder(t)
	r := decode(t, passthrough.ClusterTypeURL, raw, registry.DecodeOptions{})
	for _, tc := range []struct {
		name    string
		message proto.Message
		want    []byte
	}{
		{"Verbatim", r.Verbatim(), raw},
		{"Message, marshaled again", r.Message(), marshal(t, r.Message())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc := cache.NewLinearCache(resourcev3.ClusterType)
			if err := lc.UpdateResource(r.Name(), tc.message); err != nil {
				t.Fatal(err)
			}
			sotw := make(chan cache.Response, 1)
			cancel, err := lc.CreateWatch(&discoverypb.DiscoveryRequest{TypeUrl: resourcev3.ClusterType},
				stream.NewSotwSubscription(nil, true), sotw)
			if err != nil {
				t.Fatal(err)
			}
			if cancel != nil { // nil when the cache answered at once
				defer cancel()
			}
			resp, err := (<-sotw).GetDiscoveryResponse()
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetResources(); len(got) != 1 || !bytes.Equal(got[0].GetValue(), tc.want) || got[0].GetTypeUrl() != resourcev3.ClusterType {
				t.Errorf("SotW response resources = %v, want one Cluster of bytes %x", got, tc.want)
			}

			delta := make(chan cache.DeltaResponse, 1)
			cancelDelta, err := lc.CreateDeltaWatch(&discoverypb.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType},
				stream.NewDeltaSubscription([]string{r.Name()}, nil, nil, false), delta)
			if err != nil {
				t.Fatal(err)
			}
			if cancelDelta != nil {
				defer cancelDelta()
			}
			dresp, err := (<-delta).GetDeltaDiscoveryResponse()
			if err != nil {
				t.Fatal(err)
			}
			if got := dresp.GetResources(); len(got) != 1 || got[0].GetName() != r.Name() || !bytes.Equal(got[0].GetResource().GetValue(), tc.want) {
				t.Errorf("delta response resources = %v, want %q of bytes %x", got, r.Name(), tc.want)
			}
		})
	}
}

func TestType(t *testing.T) {
	for _, tc := range []struct {
		typeURL       string
		wantErr       error
		wantNameField int32
		wantDeps      bool
		wantAll       bool
	}{
		{typeURL: passthrough.ListenerTypeURL, wantNameField: 1, wantDeps: true, wantAll: true},
		{typeURL: passthrough.ClusterTypeURL, wantNameField: 1, wantDeps: true, wantAll: true},
		{typeURL: passthrough.ClusterLoadAssignmentTypeURL, wantNameField: 1, wantDeps: true},
		{typeURL: passthrough.RouteConfigurationTypeURL, wantNameField: 1},
		{typeURL: passthrough.SecretTypeURL, wantNameField: 1},
		{typeURL: passthrough.VirtualHostTypeURL},
		{typeURL: passthrough.LbEndpointCollectionTypeURL},
		{typeURL: passthrough.ExtensionConfigTypeURL, wantNameField: 1, wantDeps: true},
		// Messages of no Envoy resource type: a name field, or none.
		{typeURL: "type.googleapis.com/envoy.config.core.v3.Extension", wantNameField: 1},
		{typeURL: "type.googleapis.com/google.protobuf.UInt32Value"},
		{typeURL: "type.googleapis.com/example.NotLinked", wantErr: passthrough.ErrUnknownMessage},
		{typeURL: "envoy.config.cluster.v3.Cluster", wantErr: registry.ErrBadTypeURL},
	} {
		t.Run(tc.typeURL, func(t *testing.T) {
			rt, err := passthrough.Type(tc.typeURL)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Type error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if _, err := registry.New(rt); err != nil {
				t.Fatalf("registry.New: %v", err)
			}
			if rt.TypeURL != tc.typeURL || rt.NameField != tc.wantNameField || (rt.Dependencies != nil) != tc.wantDeps || rt.AllResourcesRequiredInSotW != tc.wantAll {
				t.Errorf("Type = {TypeURL %s, NameField %d, Dependencies %v, AllResourcesRequiredInSotW %v}, want {%s, %d, %v, %v}",
					rt.TypeURL, rt.NameField, rt.Dependencies != nil, rt.AllResourcesRequiredInSotW, tc.typeURL, tc.wantNameField, tc.wantDeps, tc.wantAll)
			}
		})
	}
}

// TestTypeOfAnyMessage decodes a message of no Envoy resource type,
// named by its wrapper.
func TestTypeOfAnyMessage(t *testing.T) {
	rt, err := passthrough.Type("type.googleapis.com/google.protobuf.UInt32Value")
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Decode(marshal(t, wrapperspb.UInt32(7)), registry.DecodeOptions{WrapperName: "seven"})
	if err != nil || res.Name != "seven" || res.Resource.(*passthrough.Resource).Message().(*wrapperspb.UInt32Value).GetValue() != 7 {
		t.Fatalf("Decode = %+v, %v; want the UInt32Value 7 named seven", res, err)
	}
}

// TestRegistry: Registry holds the Envoy types, and only Listener and
// Cluster are all-resources-required.
func TestRegistry(t *testing.T) {
	r := passthrough.Registry()
	want := []string{
		passthrough.ListenerTypeURL, passthrough.RouteConfigurationTypeURL, passthrough.ScopedRouteConfigurationTypeURL,
		passthrough.VirtualHostTypeURL, passthrough.ClusterTypeURL, passthrough.ClusterLoadAssignmentTypeURL,
		passthrough.LbEndpointTypeURL, passthrough.LbEndpointCollectionTypeURL, passthrough.SecretTypeURL,
		passthrough.RuntimeTypeURL, passthrough.ExtensionConfigTypeURL, passthrough.ThriftRouteConfigurationTypeURL,
	}
	if r.Len() != len(want) {
		t.Errorf("Registry has %d types, want %d: %v", r.Len(), len(want), r.TypeURLs())
	}
	for _, u := range want {
		rt, ok := r.Lookup(u)
		if !ok {
			t.Errorf("Registry has no %s", u)
			continue
		}
		full := u == passthrough.ListenerTypeURL || u == passthrough.ClusterTypeURL
		if rt.AllResourcesRequiredInSotW != full {
			t.Errorf("%s: AllResourcesRequiredInSotW = %v, want %v", u, rt.AllResourcesRequiredInSotW, full)
		}
	}
	// go-control-plane's resource types, but for ratelimit's service
	// config, are all here.
	for _, u := range []string{resourcev3.EndpointType, resourcev3.ClusterType, resourcev3.RouteType, resourcev3.ScopedRouteType,
		resourcev3.VirtualHostType, resourcev3.ListenerType, resourcev3.SecretType, resourcev3.ExtensionConfigType,
		resourcev3.RuntimeType, resourcev3.ThriftRouteType} {
		if _, ok := r.Lookup(u); !ok {
			t.Errorf("Registry has no %s", u)
		}
	}
}

// TestManyViolations: a resource breaking thousands of rules gets a NACK
// of bounded length that says how many more there were.
func TestManyViolations(t *testing.T) {
	rc := routes80()
	for i := 0; i < 1000; i++ {
		rc.VirtualHosts = append(rc.VirtualHosts, rc.VirtualHosts[1])
	}
	for _, vh := range rc.VirtualHosts {
		vh.Domains = nil
	}
	_, err := mustType(t, passthrough.RouteConfigurationTypeURL).Decode(marshal(t, rc), registry.DecodeOptions{})
	if err == nil || !strings.HasSuffix(err.Error(), "and 938 more errors") || len(err.Error()) > 5000 {
		t.Fatalf("Decode error (%d bytes) = %.200v...; want %d errors listed and the rest counted", len(err.Error()), err, registry.MaxFieldErrors)
	}
}

// TestConcurrentUse: a resource is shared by every watcher, and a type by
// every stream's decoders: dependencies (computed on first use) and
// validation (whose walk plans are learned on first use) may be asked
// for at once. Run with -race.
func TestConcurrentUse(t *testing.T) {
	for _, v := range []passthrough.Validation{passthrough.Structural, passthrough.PGV} {
		t.Run(v.String(), func(t *testing.T) { concurrentUse(t, passthrough.Options{Validation: v}.Registry()) })
	}
}

func concurrentUse(t *testing.T, reg *registry.Registry) {
	rt, _ := reg.Lookup(passthrough.ListenerTypeURL)
	raw := marshal(t, gatewayListener())
	res, err := rt.Decoder.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// In the order the listener names them: filters (field 3) before the
	// transport socket (6), a connection manager's routes before its
	// filters.
	want := []registry.Ref{rdsRef("https.443.shop.gateway"), ref(passthrough.ExtensionConfigTypeURL, "istio.wasm.auth"), secretRef("kubernetes://shop-cred")}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := rt.Validator.Validate(res.Resource, registry.DecodeOptions{}); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if got := rt.Refs(res.Resource); !slices.Equal(got, want) {
				t.Errorf("Refs = %v, want %v", got, want)
			}
		})
	}
	wg.Wait()
}
