package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// event is one watcher callback, handed from the engine's callback
// goroutine to run, which prints it: printing from one goroutine keeps the
// narrative in order.
type event struct {
	policy  *RateLimitPolicy
	err     error
	ambient bool // OnAmbientError rather than OnResourceChanged
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	// The management server: go-control-plane on 127.0.0.1, serving the
	// policy under our own type URL.
	srv, err := xdstest.Start(xdstest.Options{Name: "ratelimit"})
	if err != nil {
		return err
	}
	defer srv.Close()
	// As serves the Struct under our type URL rather than Struct's own.
	srv.Set(xdstest.R("checkout", policy("ratelimit-service", 100, "second")).As(TypeURL))
	fmt.Fprintf(out, "server: version %s of policy \"checkout\": 100 per second\n", srv.Version())

	// The client: the built-in types plus ours. Keeping the built-ins lets
	// the same engine watch the Cluster the policy depends on.
	reg, err := builtin.Registry().With(RateLimitPolicyType)
	if err != nil {
		return err
	}
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr())},
			Node:    bootstrap.Node{ID: "customtype-example"},
		},
		Registry: reg,
	})
	if err != nil {
		return err
	}
	defer e.Close()

	// engine.Watch is typed: the watcher gets *RateLimitPolicy, not
	// registry.Resource.
	events := make(chan event, 8)
	cancelWatch := engine.Watch(e, TypeURL, "checkout", engine.TypedWatcherFuncs[*RateLimitPolicy]{
		ResourceChanged: func(p *RateLimitPolicy, err error, done func()) {
			events <- event{policy: p, err: err}
			done() // lets the engine read the server's next response
		},
		AmbientError: func(err error, done func()) {
			events <- event{err: err, ambient: true}
			done()
		},
	})
	defer cancelWatch()
	next := func() (event, error) {
		select {
		case ev := <-events:
			return ev, nil
		case <-ctx.Done():
			return event{}, fmt.Errorf("waiting for the watcher: %w", ctx.Err())
		}
	}

	// 1. The first version.
	ev, err := next()
	if err != nil {
		return err
	}
	if ev.err != nil || ev.ambient {
		return fmt.Errorf("first version: %v", ev.err)
	}
	current := ev.policy
	fmt.Fprintf(out, "watcher: checkout = %v\n", current)
	for _, ref := range RateLimitPolicyType.Refs(current) {
		t, _ := reg.Lookup(ref.TypeURL)
		fmt.Fprintf(out, "watcher: checkout depends on %s %q\n", t.ShortName(), ref.Name)
	}

	// 2. An update. Update names the type URL, so no As here.
	srv.Update(TypeURL, xdstest.R("checkout", policy("ratelimit-service", 20, "minute")))
	fmt.Fprintf(out, "\nserver: version %s: 20 per minute\n", srv.Version())
	if ev, err = next(); err != nil {
		return err
	}
	if ev.err != nil || ev.ambient {
		return fmt.Errorf("update: %v", ev.err)
	}
	current = ev.policy
	fmt.Fprintf(out, "watcher: checkout = %v\n", current)

	// 3. An invalid update: the engine NACKs it. The policy was valid
	// before, so by default (gRFC A88) the watcher keeps it and hears of
	// the problem as an ambient error.
	srv.Update(TypeURL, xdstest.R("checkout", policy("ratelimit-service", 0, "fortnight")))
	fmt.Fprintf(out, "\nserver: version %s: 0 per fortnight (invalid)\n", srv.Version())
	if ev, err = next(); err != nil {
		return err
	}
	if !ev.ambient {
		return fmt.Errorf("invalid update: got a resource change (%v, %v), want an ambient error", ev.policy, ev.err)
	}
	// Every error the engine gives a watcher is an *engine.Error with a
	// gRPC status code. Its full message also names the server and the
	// node ID; the cause is enough here.
	var xe *engine.Error
	if !errors.As(ev.err, &xe) {
		return fmt.Errorf("ambient error %v is not an *engine.Error", ev.err)
	}
	fmt.Fprintf(out, "watcher: ambient error, code %v, kind %v: %v\n", status.Code(ev.err), xe.Kind, xe.Err)
	fmt.Fprintf(out, "watcher: keeps using checkout = %v\n", current)

	// What the server's operator sees: a NACK that repeats the last
	// accepted version and names the failing resource.
	nack, err := srv.WaitForRequest(ctx, xdstest.IsNACK(TypeURL))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server: NACK, client stays at version %s: %s\n", nack.GetVersionInfo(), nack.GetErrorDetail().GetMessage())

	// The engine's cache agrees: CSDS shows the resource NACKED, still
	// holding version 2 (its bytes, decoded again here), and the version
	// it rejected.
	for _, c := range e.Dump().GetGenericXdsConfigs() {
		if c.GetTypeUrl() != TypeURL {
			continue
		}
		cached, err := RateLimitPolicyType.Decode(c.GetXdsConfig().GetValue(), registry.DecodeOptions{})
		if err != nil {
			return fmt.Errorf("cached policy: %w", err)
		}
		fmt.Fprintf(out, "CSDS: %s %s, cached version %s (%v), rejected version %s\n",
			c.GetName(), c.GetClientStatus(), c.GetVersionInfo(), cached.Resource, c.GetErrorState().GetVersionInfo())
	}
	return nil
}

// policy builds a rate limit policy as the server sends it.
func policy(cluster string, requests int, unit string) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{
		"name":              "checkout",
		"cluster":           cluster,
		"requests_per_unit": requests,
		"unit":              unit,
	})
	if err != nil {
		panic(err) // only for values NewStruct cannot convert
	}
	return s
}
