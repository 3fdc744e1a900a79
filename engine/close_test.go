package engine_test

import (
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// engineGoroutines returns the stacks of goroutines running the engine's
// code, other than the caller's.
func engineGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller
		}
		if strings.Contains(g, "xdsengine/engine.") && !strings.Contains(g, "xdsengine/engine_test.") {
			out = append(out, g)
		}
	}
	return out
}

// closeAndCheck closes the engine (from the calling goroutine) and checks
// that Close returned within limit and that none of the engine's
// goroutines is left.
func closeAndCheck(t *testing.T, e *engine.Engine, limit time.Duration) {
	t.Helper()
	start := time.Now()
	if err := e.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > limit {
		t.Errorf("Close took %v, want at most %v", d, limit)
	}
	if left := engineGoroutines(); len(left) > 0 {
		t.Fatalf("%d engine goroutines outlive Close; first:\n%s", len(left), left[0])
	}
}

// TestCloseInEveryPhase: Close returns promptly and leaves no goroutine of
// the engine, whatever the engine is doing.
func TestCloseInEveryPhase(t *testing.T) {
	t.Run("connecting", func(t *testing.T) {
		// A listener that accepts and never speaks HTTP/2: the stream
		// stays in its connection handshake.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var conns sync.WaitGroup
		accepted := make(chan net.Conn, 16)
		conns.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		})
		e := newEngineFor(t, ln.Addr().String(), nil)
		e.Watch(thing, "a", watchrec.New())
		select {
		case c := <-accepted:
			defer c.Close()
		case <-time.After(10 * time.Second):
			t.Fatal("the engine never connected")
		}
		closeAndCheck(t, e, 2*time.Second)
		ln.Close()
		conns.Wait()
	})
	t.Run("in backoff", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
			c.Backoff = func(int) time.Duration { return time.Hour }
		}})
		f.servers[0].Stop()
		w, _ := f.watch(thing, "a")
		w.Next(t) // UNAVAILABLE: the stream failed; the retry waits
		f.clock.WaitForTimer(t, time.Hour)
		closeAndCheck(t, f.eng, 2*time.Second)
	})
	t.Run("while a response is applied", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		w, _ := f.watch(thing, "a")
		st := f.servers[0].WaitStream(t)
		st.RecvT(t)
		resources := make([]*anypb.Any, 0, 50_001)
		for i := 0; i < 50_000; i++ {
			resources = append(resources, res(thing, "filler-"+strconv.Itoa(i)))
		}
		resources = append(resources, res(thing, "a"))
		go st.Send(resp(thing, "1", resources...))
		time.Sleep(5 * time.Millisecond) // likely mid-response; any phase will do
		closeAndCheck(t, f.eng, 5*time.Second)
		w.Count() // no assertion on what arrived: Close may come first
	})
	t.Run("with a done outstanding", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		w := watchrec.NewHolding()
		f.eng.Watch(thing, "a", w)
		st := f.servers[0].WaitStream(t)
		st.RecvT(t)
		st.SendT(t, resp(thing, "1", res(thing, "a")))
		ev := w.NextChanged(t)
		st.SendT(t, resp(thing, "2", res(thing, "a", "v", "2"))) // held behind done
		closeAndCheck(t, f.eng, 2*time.Second)
		ev.Done() // late, after Close: harmless
	})
	t.Run("inside a callback", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		returned := make(chan time.Duration, 1)
		f.eng.Watch(thing, "a", engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
			defer done()
			start := time.Now()
			if err := f.eng.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			returned <- time.Since(start)
		}})
		st := f.servers[0].WaitStream(t)
		st.RecvT(t)
		st.SendT(t, resp(thing, "1", res(thing, "a")))
		select {
		case d := <-returned:
			if d > 2*time.Second {
				t.Errorf("Close from a callback took %v", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close from a callback did not return")
		}
		// The callback goroutine ends once the callback has returned.
		deadline := time.Now().Add(5 * time.Second)
		for len(engineGoroutines()) > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if left := engineGoroutines(); len(left) > 0 {
			t.Fatalf("%d engine goroutines left after Close from a callback; first:\n%s", len(left), left[0])
		}
	})
	t.Run("from two goroutines at once", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		w, _ := f.watch(thing, "a")
		st := f.servers[0].WaitStream(t)
		st.RecvT(t)
		st.SendT(t, resp(thing, "1", res(thing, "a")))
		w.NextChanged(t)
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Go(func() { f.eng.Close() })
		}
		wg.Wait()
		closeAndCheck(t, f.eng, time.Second) // a third time: nil, at once
	})
	t.Run("during fallback", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{servers: 2})
		f.watch(thing, "a")
		f.servers[0].WaitStream(t).RecvT(t)
		f.servers[0].Stop()
		f.servers[1].WaitStream(t).RecvT(t) // fallback stream open, nothing sent
		closeAndCheck(t, f.eng, 2*time.Second)
	})
}

// newEngineFor is an engine for one server at addr on the real clock.
func newEngineFor(t *testing.T, addr string, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	sw := features.Switches{}
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Switches:  &sw,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
