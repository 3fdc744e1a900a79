package relay_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of these tests.
const wait = 10 * time.Second

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// newUpstream is a go-control-plane server, closed with the test.
func newUpstream(t *testing.T, name string) *xdstest.Server {
	return xdstest.NewServer(t, xdstest.Options{Name: name, Logf: t.Logf})
}

// newRelay is a relay of up on loopback, closed with the test; mutate
// changes its configuration first.
func newRelay(t *testing.T, up *xdstest.Server, opts relaytest.Options, mutate func(*relay.Config)) *relaytest.Server {
	t.Helper()
	cfg := relaytest.Config(up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}))
	if mutate != nil {
		mutate(&cfg)
	}
	return relaytest.NewServer(t, cfg, opts)
}

// client is a downstream xdsengine engine of the relay, closed with the
// test.
func client(t *testing.T, r *relaytest.Server, opts relaytest.BootstrapOptions, mutate ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	bs, err := bootstrap.Parse(r.Bootstrap(opts))
	if err != nil {
		t.Fatal(err)
	}
	sw := features.Switches{}
	cfg := engine.Config{
		Bootstrap: bs,
		Registry:  builtin.Registry(),
		Transport: transport.GRPC(relaytest.FastDial),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &sw,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// latest keeps a watched resource's last delivery, for tests that wait
// for a state rather than count events.
type latest struct {
	mu      sync.Mutex
	res     registry.Resource
	err     error
	ambient error
	changes int
	// errs are every OnResourceChanged error; deletions every ambient
	// error of kind KindDeleted.
	errs, deletions []error
	changed         chan struct{}
}

func newLatest() *latest { return &latest{changed: make(chan struct{})} }

func (l *latest) OnResourceChanged(r registry.Resource, err error, done func()) {
	l.mu.Lock()
	if err == nil {
		l.res = r
	} else {
		l.errs = append(l.errs, err)
	}
	l.err = err
	l.changes++
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	done()
}

func (l *latest) OnAmbientError(err error, done func()) {
	l.mu.Lock()
	l.ambient = err
	if engine.KindOf(err) == engine.KindDeleted {
		l.deletions = append(l.deletions, err)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	done()
}

// kept fails the test if the watcher was ever told to stop using the
// resource, or that it was deleted.
func (l *latest) kept(t *testing.T, what string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 || len(l.deletions) > 0 {
		t.Errorf("%s: the client lost its resource: errors %v, deletions %v", what, l.errs, l.deletions)
	}
}

// waitFor waits until ok holds of the resource in use.
func (l *latest) waitFor(t *testing.T, what string, ok func(r registry.Resource, err error) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		l.mu.Lock()
		res, err, ch := l.res, l.err, l.changed
		if err != nil {
			res = nil
		}
		l.mu.Unlock()
		if ok(res, err) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: last resource %v, error %v", what, res, err)
		}
	}
}

// watch watches typeURL/name on src, until the test ends.
func watch(t *testing.T, src engine.Source, typeURL, name string) *latest {
	l := newLatest()
	t.Cleanup(src.Watch(typeURL, name, l))
	return l
}

// waitUntil polls cond until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
