package engine_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// TestRecycledResponsesKeepNothing: the engine hands every response it
// has handled back to the gRPC transport, which reads later responses
// into its memory; nothing the engine keeps may point into it. The
// transport here also overwrites each recycled response at once. Through
// new, unchanged and changed responses, every cached resource keeps the
// bytes last sent for it, and watchers see the last values.
func TestRecycledResponsesKeepNothing(t *testing.T) {
	srv := scriptedads.Start(t)
	tr := &scribblingTransport{Builder: transport.GRPC()}
	e := cdsEngine(t, srv.Addr(), tr)
	names := []string{"c0", "c1", "c2"}
	got := make([]atomic.Pointer[cds.Cluster], len(names))
	for i, name := range names {
		defer e.Watch(cds.TypeURL, name, engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
			if err == nil {
				got[i].Store(r.(*cds.Cluster))
			}
			done()
		}})()
	}
	st := srv.WaitStream(t)
	// The watches may take more than one request.
	for req := st.RecvT(t); len(req.GetResourceNames()) < len(names); req = st.RecvT(t) {
		t.Logf("subscribed so far: %v", req.GetResourceNames())
	}
	// Each step's EDS service names, one letter per cluster: the same
	// length throughout, so that a response fits the one recycled before.
	for i, step := range []string{"aaa", "aaa", "aba", "aba", "aba", "bbb", "bbb"} {
		version := string(rune('1' + i))
		var resources []*anypb.Any
		for j, name := range names {
			a, err := anypb.New(xdstest.Cluster(name, "eds-"+step[j:j+1]))
			if err != nil {
				t.Fatal(err)
			}
			resources = append(resources, a)
		}
		st.SendT(t, scriptedads.Response(cds.TypeURL, version, resources...))
		if ack := st.RecvT(t); ack.GetVersionInfo() != version || ack.GetErrorDetail() != nil {
			t.Fatalf("step %d: the engine answered %v, want an ACK of %s", i, ack, version)
		}
		for j, name := range names {
			cached := e.ResourceStatus(cds.TypeURL, name).GetXdsConfig().GetValue()
			if !bytes.Equal(cached, resources[j].GetValue()) {
				t.Errorf("step %d: %s cached as %x, want the bytes last sent, %x", i, name, cached, resources[j].GetValue())
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			seen := 0
			for j := range names {
				if c := got[j].Load(); c != nil && c.EDSServiceName == "eds-"+step[j:j+1] {
					seen++
				}
			}
			if seen == len(names) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("step %d: %d of %d watchers have the values sent", i, seen, len(names))
			}
		}
	}
	if n := tr.recycled.Load(); n < 7 {
		t.Errorf("%d responses recycled, want the 7 handled", n)
	}
}

// scribblingTransport is a transport whose streams overwrite each message
// the engine recycles before handing it back to the stream, and count
// them.
type scribblingTransport struct {
	transport.Builder
	recycled atomic.Int32
}

func (b *scribblingTransport) Build(s bootstrap.ServerConfig, o transport.Options) (transport.Transport, error) {
	t, err := b.Builder.Build(s, o)
	return scribblingConn{t, b}, err
}

type scribblingConn struct {
	transport.Transport
	b *scribblingTransport
}

func (c scribblingConn) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	st, err := c.Transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return scribblingStream{st, c.b}, nil
}

type scribblingStream struct {
	transport.Stream
	b *scribblingTransport
}

func (s scribblingStream) Recycle(msg []byte) {
	s.b.recycled.Add(1)
	for i := range msg[:cap(msg)] {
		msg[:cap(msg)][i] = 0xee
	}
	s.Stream.(transport.Recycler).Recycle(msg)
}
