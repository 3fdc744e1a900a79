package wire_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
)

const thing = "type.googleapis.com/xdsengine.test.Thing"

// fakeHost is a Host and Names of the test's own: it hands the stream
// the names the test sets, records what the stream tells it, and holds
// the gate of each part it is handed until the test releases it.
type fakeHost struct {
	t         *testing.T
	transport transport.Transport
	typ       registry.ResourceType

	mu      sync.Mutex
	names   []string
	handed  []string // the Names of every subscription handed over
	parts   chan wire.Part
	timeout chan []string
	quiet   chan []string
	ended   chan error
	holds   chan *wire.Hold
}

func newFakeHost(t *testing.T, addr string) *fakeHost {
	tr, err := transport.GRPC().Build(bootstrap.InsecureServer(addr), transport.Options{MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return &fakeHost{t: t, transport: tr, typ: testtype.Type(thing, false),
		parts: make(chan wire.Part, 16), timeout: make(chan []string, 4), quiet: make(chan []string, 4), ended: make(chan error, 1), holds: make(chan *wire.Hold, 16)}
}

func (h *fakeHost) Open(ctx context.Context) (transport.Stream, error) {
	return h.transport.NewStream(ctx, transport.ADSMethod)
}

func (h *fakeHost) Subscription(typeURL string) wire.Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	added := h.names
	if len(h.handed) > 0 {
		added = nil
		for _, n := range h.names {
			if !slices.Contains(h.handed, n) {
				added = append(added, n)
			}
		}
	}
	h.handed = slices.Clone(h.names)
	return wire.Subscription{Names: h.names, Added: added, Awaited: added, Timeout: 15 * time.Second}
}

// Apply keeps a copy of the part's resources: they are the stream's,
// reused once Apply returns. Each part's notification holds its gate
// until the test releases it (holds), as a watcher's done would.
func (h *fakeHost) Apply(p wire.Part) {
	p.Resources = slices.Clone(p.Resources)
	hold := new(wire.Hold)
	p.Gate.Hold(hold, wire.Pending{TypeURL: p.TypeURL, Name: "a"})
	h.holds <- hold
	h.parts <- p
}

func (h *fakeHost) Timeout(_ string, names []string)             { h.timeout <- names }
func (h *fakeHost) Quiet(typeURLs []string)                      { h.quiet <- typeURLs }
func (h *fakeHost) Ended(err error, _ bool)                      { h.ended <- err }
func (h *fakeHost) SlowWatchers(map[string]int)                  {}
func (h *fakeHost) Key(_, name string) (string, error)           { return name, nil }
func (h *fakeHost) Type(u string) (*registry.ResourceType, bool) { return &h.typ, u == thing }

func (h *fakeHost) setNames(names ...string) {
	h.mu.Lock()
	h.names = names
	h.mu.Unlock()
}

func (h *fakeHost) nextPart(t *testing.T) wire.Part {
	t.Helper()
	select {
	case p := <-h.parts:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no part handed to the host")
		return wire.Part{}
	}
}

// TestStreamThroughAHost drives a stream through a host of the test's
// own, as the engine would: the subscription it hands is written with
// the node; a response comes back as a part, decoded, and its ACK is
// written only once the part is applied; a response's notifications hold
// the next read until they are done; the does-not-exist timer of a name
// the server never sends runs on the host's clock; the server's silence
// after a new name is told as Quiet; the stream's end, as Ended.
func TestStreamThroughAHost(t *testing.T) {
	srv := scriptedads.Start(t)
	h := newFakeHost(t, srv.Addr())
	clock := fakeclock.New(time.Unix(1e9, 0))
	var goroutines sync.WaitGroup
	h.setNames("a", "b")
	st := wire.NewSotW(wire.Config{Host: h, Names: h, Goroutines: &goroutines, Memo: wire.NewMemo(),
		Node: &corepb.Node{Id: "node"}, Clock: clock, QuietWindow: time.Second, Log: slog.New(slog.DiscardHandler)})
	defer goroutines.Wait()
	defer st.Stop()
	st.Changed(thing)

	ss := srv.WaitStream(t)
	req := ss.RecvT(t)
	if req.GetNode().GetId() != "node" || !slices.Equal(req.GetResourceNames(), []string{"a", "b"}) {
		t.Fatalf("first request: node %q, names %v; want the node and [a b]", req.GetNode().GetId(), req.GetResourceNames())
	}

	nonce := ss.SendT(t, scriptedads.Response(thing, "1", testtype.Any(thing, "a", "v", "1")))
	p := h.nextPart(t)
	if !p.First || !p.Last || len(p.Resources) != 1 || p.Resources[0].Key != "a" || p.Resources[0].Err != nil || p.Version != "1" {
		t.Fatalf("part %+v, want a's resource, whole, at version 1", p)
	}
	// The host's notification holds the part's gate: the next response
	// waits for it.
	hold := <-h.holds
	ack := ss.RecvT(t)
	if ack.GetResponseNonce() != nonce || ack.GetErrorDetail() != nil {
		t.Fatalf("answer %v, want an ACK of %q", ack, nonce)
	}
	ss.SendT(t, scriptedads.Response(thing, "2", testtype.Any(thing, "a", "v", "2")))
	select {
	case p := <-h.parts:
		t.Fatalf("part %+v handed while the last one's notification is not done", p)
	case <-time.After(50 * time.Millisecond):
	}
	hold.Release()
	if p := h.nextPart(t); p.Version != "2" {
		t.Fatalf("part of version %q, want 2", p.Version)
	}
	(<-h.holds).Release()
	ss.RecvT(t)

	// b never came: its timer runs out on the host's clock.
	clock.WaitForTimer(t, 15*time.Second)
	clock.Advance(15 * time.Second)
	select {
	case names := <-h.timeout:
		if !slices.Equal(names, []string{"b"}) {
			t.Fatalf("timed out %v, want [b]", names)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b's does-not-exist timer did not run out")
	}

	// A new name the server says nothing about: quiet, after the window.
	h.setNames("a", "b", "c")
	st.Changed(thing)
	if req := ss.RecvT(t); !slices.Equal(req.GetResourceNames(), []string{"a", "b", "c"}) {
		t.Fatalf("request names %v, want [a b c]", req.GetResourceNames())
	}
	clock.WaitForTimer(t, time.Second)
	clock.Advance(time.Second)
	select {
	case types := <-h.quiet:
		if !slices.Equal(types, []string{thing}) {
			t.Fatalf("quiet %v, want [%s]", types, thing)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's silence was not told")
	}

	ss.Close(errors.New("server going away"))
	select {
	case err := <-h.ended:
		if err == nil {
			t.Fatal("Ended with no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's end was not told")
	}
}
