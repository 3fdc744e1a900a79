package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/transport"
)

// sendGate wraps a transport so that a test can hold the engine's writer
// inside a Send: while held, the next Send announces itself on entered and
// waits for release. It lets a test have responses arrive and be applied
// while no request can be built, which is otherwise a race the writer
// usually wins.
type sendGate struct {
	inner   transport.Builder
	mu      sync.Mutex
	held    bool
	entered chan struct{}
	release chan struct{}
}

func newSendGate(inner transport.Builder) *sendGate {
	return &sendGate{inner: inner, entered: make(chan struct{}, 1), release: make(chan struct{})}
}

// hold makes the next Send wait until open is called.
func (g *sendGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = true
}

func (g *sendGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	close(g.release)
	g.release = make(chan struct{})
}

func (g *sendGate) Build(s bootstrap.ServerConfig, o transport.Options) (transport.Transport, error) {
	t, err := g.inner.Build(s, o)
	if err != nil {
		return nil, err
	}
	return gatedTransport{t, g}, nil
}

type gatedTransport struct {
	transport.Transport
	g *sendGate
}

func (t gatedTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	st, err := t.Transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return gatedStream{st, t.g, ctx}, nil
}

// gatedStream has Send alone: the engine then sends every request whole.
type gatedStream struct {
	inner transport.Stream
	g     *sendGate
	ctx   context.Context
}

func (s gatedStream) Recv() ([]byte, error) { return s.inner.Recv() }

func (s gatedStream) Send(b []byte) error {
	s.g.mu.Lock()
	held, release := s.g.held, s.g.release
	s.g.mu.Unlock()
	if held {
		s.g.entered <- struct{}{}
		select {
		case <-release:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
	return s.inner.Send(b)
}

// TestDeltaEveryResponseAnswered: an incremental response is not
// superseded by the next one, so each is ACKed or NACKed with its own
// nonce, in order, even when both were applied before the writer could
// answer the first (issue 39). The NACKed resource's CSDS error state
// carries its own version, not the response's system version.
func TestDeltaEveryResponseAnswered(t *testing.T) {
	var gate *sendGate
	f := newFixture(t, fixtureOpts{serverFeatures: []string{"delta_xds"}, mutate: func(c *engine.Config) {
		gate = newSendGate(c.Transport)
		c.Transport = gate
	}})
	wa, _ := f.watch(thing, "a")
	wb, _ := f.watch(thing, "b")
	st := f.servers[0].WaitDeltaStream(t)
	for sub := 0; sub < 2; {
		sub += len(st.RecvT(t).GetResourceNamesSubscribe())
	}
	// The writer is held inside the request that subscribes c, so that
	// both responses are applied before it can answer either.
	gate.hold()
	f.watch(thing, "c")
	<-gate.entered
	n1 := st.SendT(t, scriptedads.DeltaResponse(thing, "system-1", []*discoverypb.Resource{deltaRes("b", "b-rejected", "invalid", "port 0 out of range")}))
	checkEvent(t, wb.Next(t), false, codes.InvalidArgument)
	n2 := st.SendT(t, scriptedads.DeltaResponse(thing, "system-2", []*discoverypb.Resource{deltaRes("a", "a-1")}))
	wa.NextChanged(t)
	gate.open()

	wantDelta(t, st.RecvT(t), thing, "", []string{"c"}, nil)
	nack := st.RecvT(t)
	wantDelta(t, nack, thing, n1, nil, nil)
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, `name "b"`) || !strings.Contains(msg, "port 0 out of range") {
		t.Fatalf("answer to the first response: error_detail %q, want the NACK naming b and its rule", msg)
	}
	ack := st.RecvT(t)
	wantDelta(t, ack, thing, n2, nil, nil)
	if ack.GetErrorDetail() != nil {
		t.Fatalf("answer to the second response: error_detail %v, want an ACK", ack.GetErrorDetail())
	}
	if got := f.eng.ResourceStatus(thing, "b").GetErrorState().GetVersionInfo(); got != "b-rejected" {
		t.Fatalf("CSDS error_state.version_info of the NACKed resource = %q, want its own version b-rejected", got)
	}
}
