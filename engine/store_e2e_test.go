package engine_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/gcpmatrix"
	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
)

// TestStoreBadDaysGoControlPlane runs the store's rules on the real
// clock, against go-control-plane's own server over a LinearCache (as it
// ships, behind a real TCP proxy that the test pauses), with the
// file-backed store of package lastgood, through four runs of a program:
//
//  1. it watches two clusters, cancels its watches and closes (Go's
//     defer order): the store keeps both;
//  2. the server is down (its port refuses): the store serves at once;
//  3. the path to the server drops everything (the proxy accepts and
//     forwards nothing): the store serves after StoreWait, not after
//     gRPC's 20 s connection attempt;
//  4. the path comes back to a server that no longer has c2: c1 comes
//     from the server, c2 goes after the does-not-exist timer, and the
//     store forgets it.
func TestStoreBadDaysGoControlPlane(t *testing.T) {
	srv, err := gcpmatrix.Start(gcpmatrix.LinearCache)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	proxy := tcpproxy.Start(t, srv.Addr())
	path := filepath.Join(t.TempDir(), "lastgood")
	run := func() *engine.Engine {
		t.Helper()
		store, err := lastgood.Open(path, lastgood.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.Config{
			Bootstrap:       &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(proxy.Addr())}, Node: bootstrap.Node{ID: nodeID}},
			Registry:        builtin.Registry(),
			Transport:       transport.GRPC(), // gRPC's own connection timeouts
			Backoff:         func(int) time.Duration { return 20 * time.Millisecond },
			Store:           store,
			StoreWait:       300 * time.Millisecond,
			ResourceTimeout: 500 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	watch := func(e *engine.Engine, name string) (*updRec, func()) {
		w := newUpdRec()
		return w, e.Watch(cds.TypeURL, name, w)
	}

	// 1. A clean shutdown.
	e := run()
	w1, cancel1 := watch(e, "c1")
	w2, cancel2 := watch(e, "c2")
	for _, w := range []*updRec{w1, w2} {
		if u := w.update(t); u.Err != nil || u.FromStore {
			t.Fatalf("run 1: %+v, want the cluster from the server", u)
		}
	}
	cancel2()
	cancel1()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// 2. The server is down.
	srv.Stop()
	e = run()
	w2, _ = watch(e, "c2")
	if u := w2.update(t); u.Err != nil || !u.FromStore {
		t.Fatalf("run 2, server down: %+v, want c2 from the store", u)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// 3. The path to the server drops everything.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	srv.Cache().(*cache.LinearCache).DeleteResource("c2") // for run 4
	proxy.Pause()
	e = run()
	start := time.Now()
	w1, _ = watch(e, "c1")
	w2, _ = watch(e, "c2")
	for _, w := range []*updRec{w1, w2} {
		if u := w.update(t); u.Err != nil || !u.FromStore {
			t.Fatalf("run 3, black hole: %+v, want the cluster from the store", u)
		}
		if amb := w.ambient(t); status.Code(amb) != codes.Unavailable {
			t.Fatalf("run 3: ambient %v, want UNAVAILABLE", amb)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("run 3: the store served %v after the watches, want about StoreWait (300ms)", took)
	}
	t.Logf("run 3: the store served a black-holed server's watches %v after them (StoreWait 300ms)", time.Since(start).Round(time.Millisecond))

	// 4. The path comes back; the server has c1, not c2.
	proxy.Resume()
	// The server sends c1's bytes as the store kept them: its watcher
	// hears only that the ambient error is gone.
	if err := w1.ambient(t); err != nil {
		t.Fatalf("run 4: c1's ambient error %v, want it cleared", err)
	}
	for {
		u, isUpdate := w2.next(t).(engine.Update)
		if !isUpdate {
			continue // an ambient error: the outage's, cleared
		}
		if u.Resource != nil || status.Code(u.Err) != codes.NotFound {
			t.Fatalf("run 4: c2 %+v, want NOT_FOUND once its timer ran out", u)
		}
		break
	}
	if a := e.Authorities()[0]; !a.Connected || a.FromStore != 0 {
		t.Fatalf("run 4: Connected %v, FromStore %d; want true, 0", a.Connected, a.FromStore)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	e = run()
	w2, _ = watch(e, "c2")
	if u := w2.update(t); u.Resource != nil {
		t.Fatalf("run 5, server down: c2 %+v, want nothing: the store forgot it", u)
	}
}
