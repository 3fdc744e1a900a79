package xdstest_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	ldsURL     = "type.googleapis.com/envoy.config.listener.v3.Listener"
	cdsURL     = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	ledsURL    = "type.googleapis.com/envoy.config.endpoint.v3.LbEndpointCollection"
	wrapperURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"
	// thingURL is a type no proto registry knows; it carries a
	// StringValue holding the resource name.
	thingURL = "type.googleapis.com/example.custom.v1.Thing"
	// unservedURL is a type the tests never give resources.
	unservedURL = "type.googleapis.com/example.custom.v1.Unserved"

	ledsName = "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/svc-a/locality-1"
)

func listener(name string) xdstest.Resource { return xdstest.R(name, &listenerpb.Listener{Name: name}) }
func cluster(name string) xdstest.Resource  { return xdstest.R(name, &clusterpb.Cluster{Name: name}) }

func thing(name string) xdstest.Resource {
	return xdstest.R(name, wrapperspb.String(name)).As(thingURL)
}

// collection is an LbEndpointCollection with one inline endpoint on port.
func collection(t *testing.T, port uint32) *endpointpb.LbEndpointCollection {
	t.Helper()
	ep, err := anypb.New(&endpointpb.LbEndpoint{
		HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
			Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address:       "10.0.0.1",
				PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port},
			}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &endpointpb.LbEndpointCollection{Entries: []*xdscorepb.CollectionEntry{{
		ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{
			Name:     "ep0",
			Resource: ep,
		}},
	}}}
}

// decodeName returns the name of a wire resource the way a SotW client
// finds it: from the wrapper if there is one, else from the message.
func decodeName(t *testing.T, a *anypb.Any) string {
	t.Helper()
	var m proto.Message
	switch a.GetTypeUrl() {
	case wrapperURL:
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(a.GetValue(), w); err != nil {
			t.Fatal(err)
		}
		return w.GetName()
	case ldsURL:
		m = &listenerpb.Listener{}
	case cdsURL:
		m = &clusterpb.Cluster{}
	case thingURL:
		m = &wrapperspb.StringValue{}
	default:
		t.Fatalf("no name for resource of type %s", a.GetTypeUrl())
	}
	if err := proto.Unmarshal(a.GetValue(), m); err != nil {
		t.Fatal(err)
	}
	switch m := m.(type) {
	case *listenerpb.Listener:
		return m.GetName()
	case *clusterpb.Cluster:
		return m.GetName()
	case *wrapperspb.StringValue:
		return m.GetValue()
	}
	return ""
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSubscribeACKUpdate walks the ordinary life of a client: subscribe to
// four types (built-in, LEDS, custom) and to one the server has nothing
// for, ACK, get an Update of one type only.
func TestSubscribeACKUpdate(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{Name: "main"})
	s.Set(
		listener("l1"),
		cluster("c1"),
		xdstest.Wrapped(ledsName, collection(t, 8080)),
		thing("t1"),
	)
	c := mustOpen(t, dial(t, s.Addr()), "node-a")
	c.subscribe(ldsURL, "", "l1")
	c.subscribe(cdsURL, "", "c1", "c2")
	c.subscribe(ledsURL, "", ledsName)
	c.subscribe(thingURL, "", "t1")
	c.subscribe(unservedURL, "", "nothing")

	// The unserved type gets an empty response and, above all, does not
	// end the stream (MuxCache would: "no cache defined for key").
	got := c.expect(ldsURL, cdsURL, ledsURL, thingURL, unservedURL)
	want := map[string][]string{ldsURL: {"l1"}, cdsURL: {"c1"}, ledsURL: {ledsName}, thingURL: {"t1"}, unservedURL: nil}
	for tu, r := range got {
		if r.GetVersionInfo() != "1" {
			t.Errorf("%s: version %q, want \"1\"", tu, r.GetVersionInfo())
		}
		if n := names(t, r); !slices.Equal(n, want[tu]) {
			t.Errorf("%s: resources %v, want %v", tu, n, want[tu])
		}
		c.ack(r)
	}
	for tu := range got {
		if _, err := s.WaitForRequest(ctxT(t), xdstest.IsACK(tu, "1")); err != nil {
			t.Fatal(err)
		}
	}

	s.Update(cdsURL, cluster("c1"), cluster("c2"))
	r := c.expectOne(cdsURL)
	if r.GetVersionInfo() != "2" || !slices.Equal(names(t, r), []string{"c1", "c2"}) {
		t.Fatalf("after Update: version %q resources %v, want \"2\" [c1 c2]", r.GetVersionInfo(), names(t, r))
	}
	c.ack(r)
	// Other types kept their version: no response for them.
	c.expectNone(100 * time.Millisecond)

	if got := s.Version(); got != "2" {
		t.Errorf("Version() = %q, want \"2\"", got)
	}
	if n := s.OpenStreams(); n != 1 {
		t.Errorf("OpenStreams() = %d, want 1", n)
	}
	if n := len(s.NACKs()); n != 0 {
		t.Errorf("NACKs() has %d requests, want 0", n)
	}
	// Raw wire requests: node only on the first one, though
	// go-control-plane back-fills it for its callbacks.
	reqs := s.Requests()
	if len(reqs) != 11 { // 5 subscriptions, 5 ACKs, 1 ACK of v2
		t.Fatalf("Requests() has %d requests, want 11", len(reqs))
	}
	for i, r := range reqs {
		if hasNode := r.GetNode() != nil; hasNode != (i == 0) {
			t.Errorf("request %d: node present = %v", i, hasNode)
		}
	}
	if got := reqs[0].GetNode().GetId(); got != "node-a" {
		t.Errorf("first request node %q, want node-a", got)
	}
	if sr := s.StreamRequests(); len(sr) != 1 || len(sr[0]) != 11 {
		t.Errorf("StreamRequests() shape wrong: %d streams", len(sr))
	}
}

// TestWrapping decodes on the client what Wrap does and does not do.
func TestWrapping(t *testing.T) {
	coll := collection(t, 9090)
	tests := []struct {
		name        string
		res         xdstest.Resource
		typeURL     string
		wantWrapped bool
		inner       proto.Message // decoded payload, compared with res.Message
	}{
		{"LEDS wrapped", xdstest.Wrapped(ledsName, coll), ledsURL, true, &endpointpb.LbEndpointCollection{}},
		{"custom wrapped", xdstest.Wrapped("t1", wrapperspb.String("payload")).As(thingURL), thingURL, true, &wrapperspb.StringValue{}},
		{"listener plain", listener("l1"), ldsURL, false, &listenerpb.Listener{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := xdstest.NewServer(t, xdstest.Options{})
			s.Set(tc.res)
			c := mustOpen(t, dial(t, s.Addr()), "node-w")
			c.subscribe(tc.typeURL, "", tc.res.Name)
			r := c.expectOne(tc.typeURL)
			if len(r.GetResources()) != 1 {
				t.Fatalf("got %d resources, want 1", len(r.GetResources()))
			}
			a := r.GetResources()[0]
			payload := a
			if tc.wantWrapped {
				if a.GetTypeUrl() != wrapperURL {
					t.Fatalf("outer type %s, want %s", a.GetTypeUrl(), wrapperURL)
				}
				w := &discoverypb.Resource{}
				if err := proto.Unmarshal(a.GetValue(), w); err != nil {
					t.Fatal(err)
				}
				if w.GetName() != tc.res.Name {
					t.Errorf("wrapper name %q, want %q", w.GetName(), tc.res.Name)
				}
				if w.GetTtl() != nil {
					t.Errorf("wrapper has TTL %v; the harness must strip it", w.GetTtl())
				}
				payload = w.GetResource()
			}
			if payload.GetTypeUrl() != tc.typeURL {
				t.Fatalf("payload type %s, want %s", payload.GetTypeUrl(), tc.typeURL)
			}
			if err := proto.Unmarshal(payload.GetValue(), tc.inner); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(tc.inner, tc.res.Message) {
				t.Errorf("payload %v, want %v", tc.inner, tc.res.Message)
			}
			// The server's record matches the wire.
			if sent := s.Responses(); len(sent) != 1 || !proto.Equal(sent[0], r) {
				t.Errorf("Responses() = %v, want [%v]", sent, r)
			}
		})
	}
}

// TestNACKParking: a NACK gets no response (no storm) until the type
// changes, then the new version arrives.
func TestNACKParking(t *testing.T) {
	tests := []struct {
		name string
		// ackFirst: ACK version 1 and NACK version 2 (version_info "1");
		// else NACK the very first response (version_info "").
		ackFirst bool
	}{
		{"NACK after ACK", true},
		{"NACK of first response", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := xdstest.NewServer(t, xdstest.Options{})
			s.Set(listener("l1"))
			c := mustOpen(t, dial(t, s.Addr()), "node-n")
			c.subscribe(ldsURL, "", "l1")
			bad := c.expectOne(ldsURL)
			lastGood := ""
			if tc.ackFirst {
				c.ack(bad)
				lastGood = bad.GetVersionInfo()
				s.Update(ldsURL, listener("l1"), listener("l2"))
				bad = c.expectOne(ldsURL)
				if bad.GetVersionInfo() != "2" {
					t.Fatalf("version %q, want \"2\"", bad.GetVersionInfo())
				}
			}
			before := len(s.Responses())
			c.nack(bad, lastGood)
			nack, err := s.WaitForRequest(ctxT(t), xdstest.IsNACK(ldsURL))
			if err != nil {
				t.Fatal(err)
			}
			if nack.GetResponseNonce() != bad.GetNonce() || nack.GetVersionInfo() != lastGood {
				t.Errorf("recorded NACK nonce %q version %q, want %q %q (as sent)", nack.GetResponseNonce(), nack.GetVersionInfo(), bad.GetNonce(), lastGood)
			}
			c.expectNone(300 * time.Millisecond)
			if after := len(s.Responses()); after != before {
				t.Fatalf("server sent %d responses after the NACK, want 0", after-before)
			}

			s.Update(ldsURL, listener("l1"), listener("l3"))
			r := c.expectOne(ldsURL)
			want := strconv.Itoa(map[bool]int{true: 3, false: 2}[tc.ackFirst])
			if r.GetVersionInfo() != want || !slices.Equal(names(t, r), []string{"l1"}) {
				t.Fatalf("after Update: version %q resources %v, want %q [l1]", r.GetVersionInfo(), names(t, r), want)
			}
			if n := len(s.NACKs()); n != 1 {
				t.Errorf("NACKs() has %d requests, want 1", n)
			}
		})
	}
}

// TestDeletion: for full-state types, a resource missing from the next Set
// is missing from the next response.
func TestDeletion(t *testing.T) {
	tests := []struct {
		typeURL string
		make    func(string) xdstest.Resource
	}{
		{ldsURL, listener},
		{cdsURL, cluster},
	}
	for _, tc := range tests {
		t.Run(tc.typeURL, func(t *testing.T) {
			s := xdstest.NewServer(t, xdstest.Options{})
			s.Set(tc.make("a"), tc.make("b"))
			c := mustOpen(t, dial(t, s.Addr()), "node-d")
			c.subscribe(tc.typeURL, "", "a", "b")
			r := c.expectOne(tc.typeURL)
			if got := names(t, r); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("resources %v, want [a b]", got)
			}
			c.ack(r)

			s.Set(tc.make("a"))
			r = c.expectOne(tc.typeURL)
			if got := names(t, r); r.GetVersionInfo() != "2" || !slices.Equal(got, []string{"a"}) {
				t.Fatalf("after deletion: version %q resources %v, want \"2\" [a]", r.GetVersionInfo(), got)
			}
			c.ack(r)

			s.Set()
			r = c.expectOne(tc.typeURL)
			if got := names(t, r); r.GetVersionInfo() != "3" || len(got) != 0 {
				t.Fatalf("after deleting all: version %q resources %v, want \"3\" []", r.GetVersionInfo(), got)
			}
		})
	}
}

// TestStopRestart: streams fail with Unavailable while stopped; after
// Restart a reconnecting client gets the current state, unchanged or
// changed while down.
func TestStopRestart(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{Name: "restart"})
	addr := s.Addr()
	s.Set(listener("l1"))
	cc := dial(t, addr)
	c := mustOpen(t, cc, "node-r")
	c.subscribe(ldsURL, "", "l1", "l2")
	r := c.expectOne(ldsURL)
	c.ack(r)
	if err := s.WaitForOpenStreams(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}

	for i, change := range []bool{false, true} {
		s.Stop()
		if err := c.streamErr(); status.Code(err) != codes.Unavailable {
			t.Fatalf("round %d: open stream ended with %v, want code Unavailable", i, err)
		}
		if n := s.OpenStreams(); n != 0 {
			t.Fatalf("round %d: OpenStreams() = %d after Stop", i, n)
		}
		expectUnavailable(t, cc, ldsURL)            // existing channel
		expectUnavailable(t, dial(t, addr), ldsURL) // fresh channel
		s.Stop()                                    // idempotent

		wantVersion, wantNames := r.GetVersionInfo(), names(t, r)
		if change {
			s.Set(listener("l1"), listener("l2"))
			wantVersion, wantNames = s.Version(), []string{"l1", "l2"}
		}
		s.Restart()
		if s.Addr() != addr {
			t.Fatalf("Addr() = %s after restart, want %s", s.Addr(), addr)
		}
		// Reconnect like a real client: same subscription, last ACKed
		// version, no nonce.
		c = mustOpen(t, cc, "node-r")
		c.subscribe(ldsURL, r.GetVersionInfo(), "l1", "l2")
		r = c.expectOne(ldsURL)
		if got := names(t, r); r.GetVersionInfo() != wantVersion || !slices.Equal(got, wantNames) {
			t.Fatalf("round %d: after restart: version %q resources %v, want %q %v", i, r.GetVersionInfo(), got, wantVersion, wantNames)
		}
		c.ack(r)
	}
	// Streams that failed while stopped never reached the server.
	if n := s.StreamsOpened(); n != 3 {
		t.Errorf("StreamsOpened() = %d, want 3", n)
	}
	sr := s.StreamRequests()
	if len(sr) != 3 {
		t.Fatalf("StreamRequests() has %d streams, want 3", len(sr))
	}
	for i, reqs := range sr {
		if len(reqs) == 0 || reqs[0].GetNode().GetId() != "node-r" {
			t.Errorf("stream %d: first request lacks the node", i)
		}
	}
}

// TestSilentUntilSet: before any Set, subscriptions are not answered
// (except types an Update named), and the stream stays up.
func TestSilentUntilSet(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{})
	c := mustOpen(t, dial(t, s.Addr()), "node-s")
	c.subscribe(ldsURL, "", "l1")
	c.subscribe(thingURL, "", "t1")
	c.expectNone(100 * time.Millisecond)

	// Update serves resources without TypeURL under the named type.
	s.Update(thingURL, xdstest.R("t1", wrapperspb.String("t1")))
	r := c.expectOne(thingURL)
	if got := names(t, r); r.GetVersionInfo() != "1" || !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("thing: version %q resources %v", r.GetVersionInfo(), got)
	}
	c.ack(r)
	c.expectNone(100 * time.Millisecond)

	// Set names every type: LDS gets its first response, the custom type
	// an empty one (its resources are gone).
	s.Set(listener("l1"))
	got := c.expect(ldsURL, thingURL)
	if n := names(t, got[ldsURL]); !slices.Equal(n, []string{"l1"}) {
		t.Errorf("LDS resources %v, want [l1]", n)
	}
	if n := len(got[thingURL].GetResources()); n != 0 {
		t.Errorf("thing has %d resources, want 0", n)
	}
}

// TestAllNodesShareState: the state is the same whatever the node ID.
func TestAllNodesShareState(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{})
	s.Set(cluster("c1"))
	cc := dial(t, s.Addr())
	for _, node := range []string{"node-1", "node-2", ""} {
		c := mustOpen(t, cc, node)
		c.subscribe(cdsURL, "", "c1")
		if got := names(t, c.expectOne(cdsURL)); !slices.Equal(got, []string{"c1"}) {
			t.Errorf("node %q: resources %v, want [c1]", node, got)
		}
	}
	if err := s.WaitForOpenStreams(ctxT(t), 3); err != nil {
		t.Fatal(err)
	}
}

// TestCloseAndPortReuse: Close ends open streams with Unavailable and frees
// the port for a fresh server at the same address.
func TestCloseAndPortReuse(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{Name: "first"})
	s.Set(listener("l1"))
	c := mustOpen(t, dial(t, s.Addr()), "node-c")
	c.subscribe(ldsURL, "", "l1")
	c.expectOne(ldsURL)
	s.Close()
	if err := c.streamErr(); status.Code(err) != codes.Unavailable {
		t.Fatalf("stream ended with %v, want code Unavailable", err)
	}
	s.Close() // idempotent

	_, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	s2 := xdstest.NewServer(t, xdstest.Options{Name: "second", Port: p})
	if s2.Addr() != s.Addr() {
		t.Fatalf("Addr() = %s, want %s", s2.Addr(), s.Addr())
	}
	s2.Set(listener("l9"))
	c2 := mustOpen(t, dial(t, s2.Addr()), "node-c")
	c2.subscribe(ldsURL, "", "l9")
	if got := names(t, c2.expectOne(ldsURL)); !slices.Equal(got, []string{"l9"}) {
		t.Fatalf("resources %v, want [l9]", got)
	}
}

// TestWaitForRequestSeesPast: requests that arrived before the call count,
// and a context deadline ends the wait.
func TestWaitForRequestSeesPast(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{})
	c := mustOpen(t, dial(t, s.Addr()), "node-p")
	c.subscribe(cdsURL, "", "c1")
	if _, err := s.WaitForRequest(ctxT(t), func(r *discoverypb.DiscoveryRequest) bool { return r.GetTypeUrl() == cdsURL }); err != nil {
		t.Fatal(err)
	}
	// Called again after the fact: still found.
	r, err := s.WaitForRequest(ctxT(t), func(r *discoverypb.DiscoveryRequest) bool { return r.GetTypeUrl() == cdsURL })
	if err != nil || !slices.Equal(r.GetResourceNames(), []string{"c1"}) {
		t.Fatalf("WaitForRequest = %v, %v", r, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.WaitForRequest(ctx, xdstest.IsNACK(cdsURL)); err == nil {
		t.Fatal("WaitForRequest for a NACK that never comes succeeded")
	}
}

// TestSetPanics: programming errors in a test are reported at the call.
func TestSetPanics(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{})
	tests := []struct {
		name string
		f    func()
	}{
		{"no name", func() { s.Set(xdstest.R("", &listenerpb.Listener{})) }},
		{"no message", func() { s.Set(xdstest.Resource{Name: "x"}) }},
		{"duplicate", func() { s.Set(listener("a"), listener("a")) }},
		{"Update type mismatch", func() { s.Update(ldsURL, thing("t")) }},
		{"Update without type", func() { s.Update("", listener("a")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.f()
		})
	}
	if v := s.Version(); v != "" {
		t.Errorf("Version() = %q after failed calls, want \"\"", v)
	}
}

// errorNames returns the names of a response's TP3 resource_errors, in
// order, each with its code.
func errorNames(r *discoverypb.DiscoveryResponse) []string {
	var out []string
	for _, re := range r.GetResourceErrors() {
		out = append(out, re.GetResourceName().GetName()+"="+codes.Code(re.GetErrorDetail().GetCode()).String())
	}
	return out
}

// TestResourceErrors: SetResourceErrors replaces subscribed resources by
// TP3 errors at once, in full-state and other types alike, never with the
// resource in the same response; clearing them serves the resources again.
func TestResourceErrors(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{})
	s.Set(listener("a"), listener("b"), thing("x"), thing("y"))
	c := mustOpen(t, dial(t, s.Addr()), "node-e")
	c.subscribe(ldsURL, "", "a", "b")
	c.subscribe(thingURL, "", "x", "y")
	for _, r := range c.expect(ldsURL, thingURL) {
		c.ack(r)
	}

	notFound := status.New(codes.NotFound, "gone for now").Proto()
	s.SetResourceErrors(ldsURL, map[string]*rpcstatus.Status{"b": notFound, "unsubscribed": notFound})
	r := c.expectOne(ldsURL)
	if got := names(t, r); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("LDS resources %v, want [a]: b has an error instead", got)
	}
	if got := errorNames(r); !slices.Equal(got, []string{"b=NotFound"}) {
		t.Fatalf("LDS resource_errors %v, want only the subscribed b", got)
	}
	if msg := r.GetResourceErrors()[0].GetErrorDetail().GetMessage(); msg != "gone for now" {
		t.Errorf("message %q", msg)
	}
	c.ack(r)
	c.expectNone(50 * time.Millisecond) // only LDS changed

	// An Update keeps the error in place of the new resource.
	s.Update(ldsURL, listener("a"), listener("b"))
	r = c.expectOne(ldsURL)
	if got, errs := names(t, r), errorNames(r); !slices.Equal(got, []string{"a"}) || !slices.Equal(errs, []string{"b=NotFound"}) {
		t.Fatalf("after Update: resources %v errors %v", got, errs)
	}
	c.ack(r)

	s.SetResourceErrors(thingURL, map[string]*rpcstatus.Status{"x": status.New(codes.Unavailable, "try later").Proto()})
	r = c.expectOne(thingURL)
	if got, errs := names(t, r), errorNames(r); !slices.Equal(got, []string{"y"}) || !slices.Equal(errs, []string{"x=Unavailable"}) {
		t.Fatalf("thing: resources %v errors %v", got, errs)
	}
	c.ack(r)

	s.SetResourceErrors(ldsURL, nil)
	r = c.expectOne(ldsURL)
	if got, errs := names(t, r), errorNames(r); !slices.Equal(got, []string{"a", "b"}) || len(errs) != 0 {
		t.Fatalf("after clearing: resources %v errors %v", got, errs)
	}
	if n := s.Counts().ResourceErrors; n != 3 {
		t.Errorf("Counts().ResourceErrors = %d, want 3", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("SetResourceErrors with an OK status did not panic")
		}
	}()
	s.SetResourceErrors(ldsURL, map[string]*rpcstatus.Status{"a": {}})
}

// TestCountOnly: counts are kept, messages are not.
func TestCountOnly(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{CountOnly: true})
	s.Set(listener("a"))
	c := mustOpen(t, dial(t, s.Addr()), "node-c")
	c.subscribe(ldsURL, "", "a")
	r := c.expectOne(ldsURL)
	c.nack(r, "")
	s.Set(listener("a"), listener("b"))
	c.ack(c.expectOne(ldsURL))
	deadline := time.Now().Add(5 * time.Second)
	for s.Counts().Requests < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	want := xdstest.Counts{Requests: 3, NACKs: 1, Responses: 2, StreamsOpened: 1}
	if got := s.Counts(); got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
	if len(s.Requests()) != 0 || len(s.Responses()) != 0 || len(s.NACKs()) != 0 || len(s.StreamRequests()) != 0 {
		t.Error("messages kept with CountOnly")
	}
}
