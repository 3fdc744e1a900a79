package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// newEngine is an engine that keeps what it accepts in dir, and starts
// from it when no server of an authority answers.
func newEngine(cfg engine.Config, dir string) (*engine.Engine, error) {
	store, err := lastgood.Open(filepath.Join(dir, "lastgood"), lastgood.Options{})
	if err != nil {
		return nil, err // dir is writable by others, or another process holds the store
	}
	cfg.Store = store // the engine writes it off the response path, and closes it
	e, err := engine.New(cfg)
	if err != nil {
		store.Close()
		return nil, err
	}
	return e, nil
}

// The configuration: a listener routed to one cluster and its endpoints.
const (
	listenerName  = "shop.example.com"
	routeName     = "shop-routes"
	clusterName   = "backend"
	endpointsName = "backend-endpoints"
)

func configuration(endpoints ...string) []xdstest.Resource {
	return []xdstest.Resource{
		xdstest.R(listenerName, xdstest.Listener(listenerName, routeName)),
		xdstest.R(routeName, xdstest.RouteConfig(routeName, clusterName)),
		xdstest.R(clusterName, xdstest.Cluster(clusterName, endpointsName)),
		xdstest.R(endpointsName, xdstest.ClusterLoadAssignment(endpointsName, xdstest.Locality{Zone: "a", Endpoints: endpoints})),
	}
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "lastgood-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	srv, err := xdstest.Start(xdstest.Options{Name: "xds"})
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.Set(configuration("10.0.0.1:8080", "10.0.0.2:8080")...)
	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{NodeID: "shop-frontend-1"}))
	if err != nil {
		return err
	}
	// Retries every 100 ms, so that the example does not wait gRPC's
	// backoff (1 s, then more) for the server to come back.
	cfg := engine.Config{Bootstrap: bs, Registry: builtin.Registry(), Backoff: func(int) time.Duration { return 100 * time.Millisecond }}
	pr := &printer{out: out, server: srv.Addr(), received: map[registry.Ref]time.Time{}}

	// The first process gets the configuration from the server; the store
	// keeps it. Closing the engine writes what is still pending.
	fmt.Fprintf(out, "first process, server up (version %s):\n", srv.Version())
	first, err := startProcess(cfg, dir)
	if err != nil {
		return err
	}
	for _, w := range first.watches {
		ev, err := w.next(ctx)
		if err != nil {
			first.e.Close()
			return err
		}
		pr.received[w.ref] = ev.received
		fmt.Fprintf(out, "  %s: %s\n", w.label(), pr.describe(ev))
	}
	if err := first.e.Close(); err != nil {
		return err
	}
	fmt.Fprintln(out, "first process: closed")
	if err := listStore(out, filepath.Join(dir, "lastgood"), cfg.Registry); err != nil {
		return err
	}

	// The server goes down and the process restarts. Its first connection
	// attempt fails, and the store serves what it holds: each resource as
	// an update marked FromStore, then an ambient UNAVAILABLE error that
	// says where it comes from.
	srv.Stop()
	fmt.Fprintln(out, "\nserver down; second process, on the same store:")
	second, err := startProcess(cfg, dir)
	if err != nil {
		return err
	}
	defer second.e.Close()
	for _, w := range second.watches {
		fmt.Fprintf(out, "  %s:\n", w.label())
		for range 2 { // the resource, then the ambient error
			ev, err := w.next(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "    %s\n", pr.describe(ev))
		}
	}
	fmt.Fprintf(out, "  Authorities: %d resources from the store\n", second.e.Authorities()[0].FromStore)
	x := second.e.ResourceStatus(cds.TypeURL, clusterName)
	fmt.Fprintf(out, "  CSDS %s: %s, version %s, error_state: %s\n", x.GetName(), x.GetClientStatus(), x.GetVersionInfo(),
		pr.sanitize(x.GetErrorState().GetDetails()))

	// The server comes back with a newer version: the endpoints moved
	// during the outage. What it sends wins; of the resources it sends
	// unchanged, the watchers only hear that the error is over.
	srv.Update(eds.TypeURL, configuration("10.0.0.3:8080")[3])
	srv.Restart()
	fmt.Fprintf(out, "\nserver up again, the endpoints at version %s:\n", srv.Version())
	for _, w := range second.watches {
		ev, err := w.next(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s: %s\n", w.label(), pr.describe(ev))
	}
	fmt.Fprintf(out, "  Authorities: %d resources from the store\n", second.e.Authorities()[0].FromStore)
	if pr.resourceErrors == 0 {
		fmt.Fprintln(out, "no watcher got an error in place of its resource (no NOT_FOUND, no UNAVAILABLE)")
	}
	return nil
}

// process is one run of the program: an engine on the store, and a
// watch of each resource of the configuration.
type process struct {
	e       *engine.Engine
	watches []*watched
}

func startProcess(cfg engine.Config, dir string) (*process, error) {
	e, err := newEngine(cfg, dir)
	if err != nil {
		return nil, err
	}
	p := &process{e: e}
	watch(p, lds.TypeURL, listenerName, lds.Watch)
	watch(p, rds.TypeURL, routeName, rds.Watch)
	watch(p, cds.TypeURL, clusterName, cds.Watch)
	watch(p, eds.TypeURL, endpointsName, eds.Watch)
	return p, nil
}

// watched is one watch; its watcher passes each callback on as an event.
type watched struct {
	ref    registry.Ref
	kind   string // the type's short name
	events chan event
}

func (w *watched) label() string { return w.kind + " " + w.ref.Name }

func (w *watched) next(ctx context.Context) (event, error) {
	select {
	case ev := <-w.events:
		return ev, nil
	case <-ctx.Done():
		return event{}, fmt.Errorf("%s: waiting for the watcher: %w", w.label(), ctx.Err())
	}
}

// watch watches a resource with its type's typed Watch. The program
// cancels no watch: an engine's Close ends them all.
func watch[T any](p *process, typeURL, name string, typedWatch func(engine.Source, string, engine.TypedWatcher[T]) func()) {
	typ, _ := p.e.Registry().Lookup(typeURL)
	w := &watched{ref: registry.Ref{TypeURL: typeURL, Name: name}, kind: typ.ShortName(), events: make(chan event, 8)}
	p.watches = append(p.watches, w)
	typedWatch(p.e, name, recorder[T]{w})
}

// event is one watcher callback.
type event struct {
	ref       registry.Ref
	resource  any // nil with err
	err       error
	ambient   bool
	version   string
	received  time.Time
	fromStore bool
	at        time.Time // when the callback ran
}

// recorder is a typed watcher that wants each update's origin
// (engine.TypedUpdateWatcher): the engine calls OnUpdate in place of
// OnResourceChanged.
type recorder[T any] struct{ w *watched }

func (r recorder[T]) OnResourceChanged(T, error, func()) {}

func (r recorder[T]) OnUpdate(u engine.TypedUpdate[T], done func()) {
	ev := event{ref: r.w.ref, err: u.Err, version: u.Version, received: u.Received, fromStore: u.FromStore, at: time.Now()}
	if u.Err == nil {
		ev.resource = u.Resource
	}
	r.w.events <- ev
	done()
}

func (r recorder[T]) OnAmbientError(err error, done func()) {
	r.w.events <- event{ref: r.w.ref, err: err, ambient: true, at: time.Now()}
	done()
}

// printer describes events. The server's address and the times in
// messages, which change from run to run, become words.
type printer struct {
	out    io.Writer
	server string
	// received is when the first process received each resource.
	received map[registry.Ref]time.Time
	// resourceErrors counts the errors delivered in place of a resource.
	resourceErrors int
}

func (pr *printer) describe(ev event) string {
	switch {
	case ev.ambient && ev.err == nil:
		return "ambient error cleared: the server sent the same resource"
	case ev.ambient:
		return fmt.Sprintf("ambient error: %v (%v): %s", status.Code(ev.err), engine.KindOf(ev.err), pr.sanitize(cause(ev.err).Error()))
	case ev.err != nil:
		pr.resourceErrors++
		return fmt.Sprintf("error: %v (%v): %s", status.Code(ev.err), engine.KindOf(ev.err), pr.sanitize(cause(ev.err).Error()))
	}
	from := "from the server"
	if ev.fromStore {
		from = "FromStore, received at another time"
		if ev.received.Equal(pr.received[ev.ref]) {
			from = "FromStore, received by the first process"
		}
	}
	return fmt.Sprintf("%v [version %s, %s]", ev.resource, ev.version, from)
}

// cause is the error an *engine.Error wraps: its whole message also
// names the resource, the server and the node.
func cause(err error) error {
	var xe *engine.Error
	if errors.As(err, &xe) {
		return xe.Err
	}
	return err
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// sanitize replaces the server's address and times in msg by words, and
// cuts the transport's own, which vary.
func (pr *printer) sanitize(msg string) string {
	msg = strings.ReplaceAll(msg, pr.server, "<server>")
	msg = rfc3339.ReplaceAllString(msg, "<time>")
	if i := strings.Index(msg, ": rpc error"); i >= 0 {
		msg = msg[:i] + ": <the connection error>"
	}
	return msg
}

// listStore prints what the store at path holds, as `xdsctl store PATH`
// does. A reader takes no lock: it neither waits for nor blocks the
// process that writes the store.
func listStore(out io.Writer, path string, reg *registry.Registry) error {
	s, err := lastgood.Open(path, lastgood.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	got, err := s.Load(s.Digest())
	if err != nil {
		return err
	}
	var lines []string
	for _, r := range got.Resources {
		typ, _ := reg.Lookup(r.TypeURL)
		lines = append(lines, fmt.Sprintf("  %-22s %-18s %s", typ.ShortName(), r.Name, r.Version))
	}
	slices.Sort(lines)
	fmt.Fprintf(out, "the store holds %d resources (%d corrupt):\n  %-22s %-18s %s\n%s\n",
		len(got.Resources), got.Corrupt, "TYPE", "NAME", "VERSION", strings.Join(lines, "\n"))
	return nil
}
