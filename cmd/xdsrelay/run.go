package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/passthrough"
)

// Exit codes.
const (
	exitOK      = 0 // stopped by SIGINT or SIGTERM
	exitFailure = 1 // could not start, or failed serving
	exitUsage   = 2 // bad command line
)

const usage = `xdsrelay relays xDS: it subscribes upstream, to the servers of a gRPC
bootstrap, once for all the clients that share a configuration, and serves
those clients (gRPC, Envoy, xdsengine) over ADS, State of the World and
incremental, with the gRPC health service and CSDS on the same port.

Usage:
  xdsrelay [flags]

Flags:
  --bootstrap FILE   the upstream: a gRPC xDS bootstrap file (servers, node,
                     authorities); without it, the file named by
                     $GRPC_XDS_BOOTSTRAP or else the JSON in
                     $GRPC_XDS_BOOTSTRAP_CONFIG
  --listen ADDR      where to serve (default localhost:18000)
  --tls-cert FILE    serve TLS with this certificate chain (PEM)...
  --tls-key FILE     ...and this private key (PEM)
  --client-ca FILE   require client certificates signed by these CAs (PEM):
                     mutual TLS; needs --tls-cert and --tls-key
  --registry NAME    the resource types relayed, and what is NACKed upstream:
                     builtin (the default: gRPC's rules, for gRPC clients),
                     passthrough (every Envoy type, served as sent, checked only
                     that it parses: each client applies its own rules; for
                     Envoy and gRPC clients alike) or passthrough-pgv (Envoy's
                     proto constraints too: for Envoy clients only, as gRPC's
                     resources break them, e.g. istiod's api_listener without a
                     stat_prefix)
  --key KEY          which clients share a configuration: cluster (the node's
                     cluster, the default), id (the node ID) or metadata:NAME
                     (a string field of the node's metadata)
  --linger DUR       how long an upstream subscription outlives its last
                     client (default 30s)
  --store DIR        keep each key's last good configuration in a file of DIR
                     (package lastgood), so that a relay restarted while its
                     upstream is unreachable serves it
  --grace DUR        how long a shutdown waits for streams to end (default 10s)
  --log-level LEVEL  debug, info, warn or error (default info)
  --demo             serve a demo configuration from an embedded go-control-plane
                     server (package xdstest) instead of the bootstrap's servers
  --demo-interval DUR  how often the demo's endpoints change (default 5s;
                     positive, with --demo)
  --version          print the version and exit

Upstream node: the engine of each key presents the bootstrap's node with the
key in the field it comes from (the cluster, the ID or the metadata field).

Health (grpc.health.v1.Health, on the --listen port, which xdsrelay binds
before it starts anything else):
  ""          SERVING from the start until shutdown begins, whatever the
              upstream does: the relay serves its last good configuration
              through upstream outages, and holds a new client's answer until
              the upstream has one. Probe it for liveness (the process serves)
              and readiness (it takes clients).
  "upstream"  whether the upstream answers, for alerting, never for readiness:
              SERVING while some key's upstream has answered and none fails;
              NOT_SERVING while a key's upstream is unreachable or has not
              answered yet; UNKNOWN while no client is subscribed (none yet, or
              none for --linger), since nothing is asked of the upstream until
              one is: as a readiness probe it would keep the first client away
              for ever. The log says why at each change. A response the relay
              rejects (NACK) leaves it SERVING, for the upstream answers and
              clients keep the last good version: the log names what was
              rejected, and CSDS shows it.

CSDS (envoy.service.status.v3.ClientStatusDiscoveryService, with server
reflection) shows the engine of each key, client_scope being the key.

Try it:
  go run ./cmd/xdsrelay --demo
  GRPC_XDS_BOOTSTRAP_CONFIG='{"xds_servers": [{"server_uri": "localhost:18000",
    "channel_creds": [{"type": "insecure"}]}], "node": {"id": "me", "cluster": "demo"}}' \
    go run ./cmd/xdsctl watch eds demo-endpoints
The demo's endpoints change every 5s. With the same bootstrap, a gRPC
client's channel to xds:///demo.example.com reaches the demo's backends
(grpc.health.v1.Health, service "demo"); "xdsctl dump --csds
localhost:18000" shows the relay's engines.

Exit status:
  0  stopped by SIGINT or SIGTERM, after a graceful shutdown
  1  failure: unreadable bootstrap or certificates, address in use
  2  usage error
`

type options struct {
	bootstrap, listen, store  string
	tlsCert, tlsKey, clientCA string
	key, logLevel, registry   string
	linger, grace             time.Duration
	demo, version             bool
	demoInterval              time.Duration // how often the demo upstream changes
	agg                       relay.Aggregation
	reg                       func() *registry.Registry
	level                     slog.Level
}

// registries are the --registry choices.
var registries = map[string]func() *registry.Registry{
	"builtin":         builtin.Registry,
	"passthrough":     passthrough.Registry,
	"passthrough-pgv": passthrough.Options{Validation: passthrough.PGV}.Registry,
}

func parseFlags(args []string) (*options, bool, error) {
	o := &options{}
	fs := flag.NewFlagSet("xdsrelay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.bootstrap, "bootstrap", "", "")
	fs.StringVar(&o.listen, "listen", "localhost:18000", "")
	fs.StringVar(&o.store, "store", "", "")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "")
	fs.StringVar(&o.tlsKey, "tls-key", "", "")
	fs.StringVar(&o.clientCA, "client-ca", "", "")
	fs.StringVar(&o.key, "key", "cluster", "")
	fs.StringVar(&o.registry, "registry", "builtin", "")
	fs.DurationVar(&o.linger, "linger", relay.DefaultLinger, "")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "")
	fs.StringVar(&o.logLevel, "log-level", "info", "")
	fs.BoolVar(&o.demo, "demo", false, "")
	fs.DurationVar(&o.demoInterval, "demo-interval", 5*time.Second, "")
	fs.BoolVar(&o.version, "version", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, true, nil
		}
		return nil, false, err
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected argument %q: xdsrelay takes flags only", fs.Arg(0))
	}
	var err error
	if o.agg, err = relay.ParseAggregation(o.key); err != nil {
		return nil, false, fmt.Errorf("--key: %w", err)
	}
	if o.reg = registries[o.registry]; o.reg == nil {
		return nil, false, fmt.Errorf("--registry %q: want builtin, passthrough or passthrough-pgv", o.registry)
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return nil, false, fmt.Errorf("--listen %q: want host:port: %w", o.listen, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, false, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	switch {
	case o.linger <= 0:
		return nil, false, fmt.Errorf("--linger %v: must be positive", o.linger)
	case o.grace < 0:
		return nil, false, fmt.Errorf("--grace %v: must not be negative", o.grace)
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return nil, false, errors.New("--tls-cert and --tls-key go together")
	case o.clientCA != "" && o.tlsCert == "":
		return nil, false, errors.New("--client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first")
	case o.demo && o.bootstrap != "":
		return nil, false, errors.New("--demo and --bootstrap exclude each other: the demo is its own upstream")
	case set["demo-interval"] && !o.demo:
		return nil, false, errors.New("--demo-interval needs --demo: it paces the demo's changes")
	case o.demoInterval <= 0:
		return nil, false, fmt.Errorf("--demo-interval %v: must be positive", o.demoInterval)
	}
	return o, false, nil
}

// run is the whole program: main only wires signals and exits with its
// result, so tests call run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	stderr = &lockedWriter{w: stderr}
	o, help, err := parseFlags(args)
	switch {
	case help:
		fmt.Fprint(stdout, usage)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "xdsrelay: %v\nRun 'xdsrelay -h' for usage.\n", err)
		return exitUsage
	case o.version:
		fmt.Fprintf(stdout, "xdsrelay %s (%s %s/%s)\n", engine.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.level}))
	if err := serve(ctx, o, log); err != nil {
		fmt.Fprintf(stderr, "xdsrelay: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// upstreamBootstrap reads the relay's bootstrap, or starts the demo
// upstream; stop ends the latter.
func upstreamBootstrap(ctx context.Context, o *options, log *slog.Logger) (bs *bootstrap.Bootstrap, stop func(), err error) {
	if o.demo {
		return startDemo(ctx, o.demoInterval, log)
	}
	if o.bootstrap != "" {
		data, err := os.ReadFile(o.bootstrap)
		if err != nil {
			return nil, nil, fmt.Errorf("--bootstrap: %w", err)
		}
		bs, err = bootstrap.Parse(data)
		if err != nil {
			return nil, nil, fmt.Errorf("--bootstrap %s: %w", o.bootstrap, err)
		}
		return bs, func() {}, nil
	}
	bs, err = bootstrap.FromEnv()
	if err != nil {
		return nil, nil, fmt.Errorf("no --bootstrap, and the environment has none: %w", err)
	}
	return bs, func() {}, nil
}

func serve(ctx context.Context, o *options, log *slog.Logger) error {
	// The address first: a relay that cannot serve starts nothing (no
	// demo upstream, no engine) and says why at once.
	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	defer lis.Close() // Serve closes it too; this is for the failures before
	serverOpts, err := credentialsOption(o)
	if err != nil {
		return err
	}
	bs, stopDemo, err := upstreamBootstrap(ctx, o, log)
	if err != nil {
		return err
	}
	defer stopDemo()
	cfg := relay.Config{
		Upstream:    engine.Config{Bootstrap: bs, Registry: o.reg(), UserAgentName: "xdsrelay"},
		Aggregation: o.agg,
		Linger:      o.linger,
		Logger:      log,
	}
	if o.store != "" {
		cfg.Store = relay.StoreDir(o.store, lastgood.Options{Logger: log})
	}
	r, err := relay.New(cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	s := grpc.NewServer(serverOpts...)
	xdsCtx, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	r.Register(xdsCtx, s, nil)
	hs := health.NewServer()
	upstream := registerHealth(s, hs, r, log)
	csds.RegisterWithReflection(s, r)

	var wg sync.WaitGroup
	defer wg.Wait()
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	wg.Go(func() { pollHealth(pollCtx, r, hs, upstream, log) })
	served := make(chan error, 1)
	wg.Go(func() { served <- s.Serve(lis) })
	log.Info("xdsrelay: serving xDS, health and CSDS", "addr", lis.Addr().String(), "version", engine.Version, "key", o.key)

	select {
	case err := <-served:
		stopPolling()
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("xdsrelay: shutting down", "grace", o.grace)
	stopPolling()
	hs.Shutdown() // every service NOT_SERVING: load balancers drain
	endStreams()  // xDS streams end with OK; clients reconnect elsewhere
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(o.grace):
		log.Warn("xdsrelay: streams still open after the grace period; closing them")
		s.Stop()
		<-stopped
	}
	<-served
	return nil
}

// lockedWriter serializes writes: the logs come from many goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
