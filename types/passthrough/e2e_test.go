package passthrough_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/passthrough"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// startEngine starts an engine with reg on mgmt, as node nodeID.
func startEngine(t *testing.T, mgmt *xdstest.Server, nodeID string, reg *registry.Registry) *engine.Engine {
	t.Helper()
	bs, err := bootstrap.Parse(mgmt.Bootstrap(xdstest.BootstrapOptions{NodeID: nodeID}))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// nodeOf returns the node ID of the stream that sent req: the node is in
// the first request of a stream only.
func nodeOf(mgmt *xdstest.Server, req *discoverypb.DiscoveryRequest) string {
	for _, stream := range mgmt.StreamRequests() {
		for _, r := range stream {
			if r == req {
				return stream[0].GetNode().GetId()
			}
		}
	}
	return ""
}

// sentBytes returns the bytes of the resource called name in the last
// response of typeURL the server sent.
func sentBytes(t *testing.T, mgmt *xdstest.Server, typeURL, name string, decode func([]byte) string) []byte {
	t.Helper()
	var found []byte
	for _, resp := range mgmt.Responses() {
		if resp.GetTypeUrl() != typeURL {
			continue
		}
		for _, a := range resp.GetResources() {
			if decode(a.GetValue()) == name {
				found = a.GetValue()
			}
		}
	}
	if found == nil {
		t.Fatalf("the server sent no %s %q", typeURL, name)
	}
	return found
}

// TestEndToEnd serves istiod's STATIC and ORIGINAL_DST clusters and its
// inbound listener, whose TLS takes certificates from SDS and which has
// no api_listener, from go-control-plane to two engines: one with the
// built-in registry, which NACKs each as gRPC would, and one with the
// pass-through registry, which takes each with the bytes the server sent.
func TestEndToEnd(t *testing.T) {
	mgmt := xdstest.NewServer(t, xdstest.Options{})
	resources := []struct {
		typeURL string
		msg     interface {
			proto.Message
			GetName() string
		}
		builtinNACK string // the built-in type's verdict
	}{
		{passthrough.ClusterTypeURL, blackHoleCluster(), "type: discovery type STATIC is not supported"},
		{passthrough.ClusterTypeURL, passthroughCluster(), "type: discovery type ORIGINAL_DST is not supported"},
		{passthrough.ListenerTypeURL, virtualInbound(), "tls_certificate_sds_secret_configs: not supported"},
	}
	var state []xdstest.Resource
	for _, r := range resources {
		state = append(state, xdstest.R(r.msg.GetName(), r.msg))
	}
	mgmt.Set(state...)

	gRPCLike := startEngine(t, mgmt, "grpc-client", builtin.Registry())
	relay := startEngine(t, mgmt, "relay", passthrough.Registry())
	parent := t
	for _, r := range resources {
		name := r.msg.GetName()
		t.Run(name, func(t *testing.T) {
			builtinW, relayW := watchrec.New(), watchrec.New()
			// The watches stay until the ACKs and NACKs are checked below.
			parent.Cleanup(gRPCLike.Watch(r.typeURL, name, builtinW))
			parent.Cleanup(relay.Watch(r.typeURL, name, relayW))

			rejected := builtinW.NextChanged(t)
			if rejected.Resource != nil || status.Code(rejected.Err) != codes.InvalidArgument || !strings.Contains(rejected.Err.Error(), r.builtinNACK) {
				t.Errorf("built-in registry: %v, want an INVALID_ARGUMENT error containing %q", rejected, r.builtinNACK)
			} else {
				t.Logf("built-in registry: %v", rejected.Err)
			}

			accepted := relayW.NextChanged(t)
			res, ok := accepted.Resource.(*passthrough.Resource)
			if !ok {
				t.Fatalf("pass-through registry: %v, want the resource", accepted)
			}
			t.Logf("pass-through registry: %v", res)
			if !proto.Equal(res.Message(), r.msg) {
				t.Errorf("Message = %v, want %v", res.Message(), r.msg)
			}
			sent := sentBytes(t, mgmt, r.typeURL, name, func(b []byte) string {
				m := r.msg.ProtoReflect().New().Interface()
				if proto.Unmarshal(b, m) != nil {
					return ""
				}
				return m.(interface{ GetName() string }).GetName()
			})
			if !bytes.Equal(res.Raw(), sent) {
				t.Errorf("Raw differs from the bytes the server sent")
			}
		})
	}

	// The server saw the two verdicts: NACKs from the gRPC-like client,
	// ACKs from the relay, for each type.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, typeURL := range []string{passthrough.ClusterTypeURL, passthrough.ListenerTypeURL} {
		nack, err := mgmt.WaitForRequest(ctx, func(req *discoverypb.DiscoveryRequest) bool {
			return xdstest.IsNACK(typeURL)(req) && nodeOf(mgmt, req) == "grpc-client"
		})
		if err != nil {
			t.Fatalf("no NACK of %s from the built-in engine: %v", typeURL, err)
		}
		t.Logf("built-in engine NACKs %s: %s", typeURL, nack.GetErrorDetail().GetMessage())
		if _, err := mgmt.WaitForRequest(ctx, func(req *discoverypb.DiscoveryRequest) bool {
			return xdstest.IsACK(typeURL, "1")(req) && nodeOf(mgmt, req) == "relay"
		}); err != nil {
			t.Fatalf("no ACK of %s from the pass-through engine: %v", typeURL, err)
		}
	}
	for _, req := range mgmt.NACKs() {
		if nodeOf(mgmt, req) == "relay" {
			t.Errorf("the pass-through engine NACKed: %s", req.GetErrorDetail().GetMessage())
		}
	}
}
