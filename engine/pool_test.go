package engine_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

func TestListenerName(t *testing.T) {
	b := &bootstrap.Bootstrap{
		ClientDefaultListenerResourceNameTemplate: "xdstp://def/envoy.config.listener.v3.Listener/%s",
		Authorities: map[string]bootstrap.Authority{
			"a.example": {},
			"b.example": {ClientListenerResourceNameTemplate: "xdstp://b.example/envoy.config.listener.v3.Listener/grpc/client/%s?k=v"},
		},
	}
	tests := []struct{ target, want, wantErr string }{
		{"xds:///svc.example.com:443", "xdstp://def/envoy.config.listener.v3.Listener/svc.example.com:443", ""},
		{"xds://a.example/svc", "xdstp://a.example/envoy.config.listener.v3.Listener/svc", ""},
		{"xds://b.example/svc/x", "xdstp://b.example/envoy.config.listener.v3.Listener/grpc/client/svc/x?k=v", ""},
		{"xds:///[::1]:80", "xdstp://def/envoy.config.listener.v3.Listener/%5B::1%5D:80", ""},
		{"plain-name", "xdstp://def/envoy.config.listener.v3.Listener/plain-name", ""},
		{"xds://unknown.example/svc", "", `authority "unknown.example" is not in the bootstrap`},
		{"xds://a.example/", "", "no endpoint name"},
	}
	for _, tc := range tests {
		got, err := b.ListenerName(tc.target)
		if tc.wantErr != "" {
			if err == nil || !contains(err.Error(), tc.wantErr) {
				t.Errorf("ListenerName(%q) error = %v, want %q", tc.target, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ListenerName(%q) = %q, %v; want %q", tc.target, got, err, tc.want)
		}
	}
	old := &bootstrap.Bootstrap{}
	if got, _ := old.ListenerName("xds:///svc"); got != "svc" {
		t.Errorf("default template: got %q, want svc", got)
	}
}

func TestPoolSharesAndReleases(t *testing.T) {
	p, err := engine.NewPool(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("localhost:1")}},
		Registry:  testtype.Registry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a1, releaseA1, _ := p.Get("xds:///a")
	a2, releaseA2, _ := p.Get("xds:///a")
	b, releaseB, _ := p.Get("xds:///b")
	if a1 != a2 || a1 == b {
		t.Fatal("want one engine per target")
	}
	if got := p.Targets(); len(got) != 2 {
		t.Fatalf("targets %v", got)
	}
	dumps := p.Dump()
	if dumps[0].GetClientScope() != "xds:///a" || dumps[1].GetClientScope() != "xds:///b" {
		t.Fatalf("client scopes %q %q", dumps[0].GetClientScope(), dumps[1].GetClientScope())
	}
	releaseA1()
	releaseA1() // idempotent: must not drop a2's reference
	if len(p.Targets()) != 2 {
		t.Fatal("engine closed while still referenced")
	}
	releaseA2()
	releaseB()
	if len(p.Targets()) != 0 {
		t.Fatalf("engines left: %v", p.Targets())
	}
	a3, release3, _ := p.Get("xds:///a")
	defer release3()
	if a3 == a1 {
		t.Fatal("a closed engine was handed out again")
	}
	p.Close()
	if _, _, err := p.Get("xds:///c"); err == nil {
		t.Fatal("Get after Close succeeded")
	}
}

// TestPoolRefusesAStore: a store is one engine's, and a pool makes many.
func TestPoolRefusesAStore(t *testing.T) {
	_, err := engine.NewPool(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("localhost:1")}},
		Registry:  testtype.Registry(),
		Store:     newMemStore(),
	})
	if err == nil || !contains(err.Error(), "Config.Store") {
		t.Fatalf("NewPool with a store: %v, want an error naming Config.Store", err)
	}
}

// TestPoolCloseAndConcurrentUse: Close closes the engines still in use,
// and a release after it does nothing; gets and releases from several
// goroutines (for -race) leave no engine behind.
func TestPoolCloseAndConcurrentUse(t *testing.T) {
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("localhost:1")}},
		Registry:  testtype.Registry(),
	}
	p, err := engine.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				_, release, err := p.Get(fmt.Sprintf("xds:///t%d", (i+j)%3))
				if err != nil {
					t.Error(err)
					return
				}
				release()
			}
		})
	}
	wg.Wait()
	if got := p.Targets(); len(got) != 0 {
		t.Fatalf("after every release, targets %v", got)
	}
	e, release, err := p.Get("xds:///kept")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Transport(cfg.Bootstrap.Servers[0]); status.Code(err) != codes.Unavailable {
		t.Fatalf("the engine in use after the pool's Close: Transport gives %v, want UNAVAILABLE (closed)", err)
	}
	release() // after Close: nothing left to close
	if got := p.Targets(); len(got) != 0 {
		t.Fatalf("targets %v after Close", got)
	}
	if _, _, err := p.Get("xds:///again"); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
}
