package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
)

// Exit codes.
const (
	exitOK      = 0 // success; watch: stopped by SIGINT or SIGTERM
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad command line
)

// command is one subcommand.
type command struct {
	name  string
	usage string // printed for "xdsctl help NAME" and "xdsctl NAME -h"
	run   func(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int
}

var commands = []*command{
	{name: "watch", usage: watchUsage, run: runWatch},
	{name: "resolve", usage: resolveUsage, run: runResolve},
	{name: "dump", usage: dumpUsage, run: runDump},
	{name: "store", usage: storeUsage, run: runStore},
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

const usage = `xdsctl is an xDS client for operators: it asks a control plane for
resources the way a gRPC client does, using the same bootstrap file, and
shows what the client makes of them.

Usage:
  xdsctl watch   [flags] TYPE NAME...   print every update of the resources until interrupted
  xdsctl resolve [flags] LISTENER       resolve a listener down to its endpoints, print the tree
  xdsctl dump    [flags] TYPE NAME...   watch the resources, then print the client's CSDS view
  xdsctl dump    --csds ADDR            print the CSDS view of a running xDS client
  xdsctl store   PATH                   list a last-known-good store's resources, no server needed
  xdsctl help    [COMMAND]              print this help, or a command's
  xdsctl version                        print xdsctl's version

TYPE is one of:
  lds, listener        type.googleapis.com/envoy.config.listener.v3.Listener
  rds, route           type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  cds, cluster         type.googleapis.com/envoy.config.cluster.v3.Cluster
  eds, endpoint        type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
  leds, collection     type.googleapis.com/envoy.config.endpoint.v3.LbEndpointCollection
or one of those type URLs, or its message name (envoy.config.listener.v3.Listener).

Flags common to watch, resolve and dump (before or after the arguments):
  --bootstrap FILE        gRPC xDS bootstrap file; without it, the file named by
                          $GRPC_XDS_BOOTSTRAP or else the JSON in $GRPC_XDS_BOOTSTRAP_CONFIG
  --v                     log the xDS engine's debug logs to stderr
  --resource-timeout DUR  (advanced) length of the does-not-exist timer; default 15s,
                          or what the server's features say

Examples:
  xdsctl watch --bootstrap bootstrap.json lds listener.example.com
  GRPC_XDS_BOOTSTRAP=bootstrap.json xdsctl watch cds cluster-a cluster-b
  xdsctl resolve --bootstrap bootstrap.json --timeout 5s listener.example.com
  xdsctl dump --bootstrap bootstrap.json --wait 5s cds cluster-a
  xdsctl dump --csds localhost:9901
  xdsctl store /var/lib/myapp/xds/lastgood

Exit status:
  0  success; for watch, stopped by SIGINT or SIGTERM
  1  failure: unreadable bootstrap or store, unreachable server, a resource missing
     or invalid, a timeout
  2  usage error, told in one line that names the problem and the help to read

Run "xdsctl help COMMAND" for a command's flags and output.
`

// run is the whole program: main only parses the environment and exits
// with run's result, so tests call run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The engine's callbacks and logs write from its own goroutines.
	stdout = &lockedWriter{w: stdout}
	stderr = &lockedWriter{w: stderr}
	if len(args) == 0 {
		return usageLine(stderr, "xdsctl", "no command", "xdsctl help")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		c := lookupCommand(args[1])
		if c == nil || len(args) > 2 {
			return usageLine(stderr, "xdsctl help", fmt.Sprintf("unknown command %q", strings.Join(args[1:], " ")), "xdsctl help")
		}
		fmt.Fprint(stdout, c.usage)
		return exitOK
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	}
	c := lookupCommand(args[0])
	if c == nil {
		if strings.HasPrefix(args[0], "-") {
			return usageLine(stderr, "xdsctl", fmt.Sprintf("flag %s before the command; flags go after it", args[0]), "xdsctl help")
		}
		return usageLine(stderr, "xdsctl", fmt.Sprintf("unknown command %q", args[0]), "xdsctl help")
	}
	return c.run(ctx, c, args[1:], stdout, stderr)
}

// lockedWriter serializes writes, so that each event, written with one
// Write call, comes out whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// usageError is a bad command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// usageLine reports a bad command line in one line, with a hint where the
// usage is, and returns the usage exit status.
func usageLine(stderr io.Writer, who, problem, helpCmd string) int {
	fmt.Fprintf(stderr, "%s: %s\nRun '%s' for usage.\n", who, problem, helpCmd)
	return exitUsage
}

// versionLine says which xdsctl this is: the version of the xdsengine
// module it was built from, which holds xdsctl and the engine alike
// ([engine.Version]), and the Go version.
func versionLine() string {
	return fmt.Sprintf("xdsctl %s (%s %s/%s)", engine.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// fail reports err for command c and returns the exit status it calls
// for: a usage error is one line and a hint, not the whole usage.
func fail(c *command, stderr io.Writer, err error) int {
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		return usageLine(stderr, "xdsctl "+c.name, err.Error(), "xdsctl "+c.name+" -h")
	}
	fmt.Fprintf(stderr, "xdsctl %s: %v\n", c.name, err)
	return exitFailure
}

// newFlagSet returns a quiet flag set: the commands print their own
// usage text, which leaves the advanced flags out of the short form.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("xdsctl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses flags placed anywhere among the arguments (the
// standard flag package stops at the first argument that is not a flag)
// and returns the positional arguments. Everything after "--" is
// positional. help reports -h or --help.
func parseArgs(fs *flag.FlagSet, args []string) (positional []string, help bool, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, true, nil
			}
			return nil, false, &usageError{msg: err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, false, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), false, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseCommandLine parses a command's arguments; done reports that the
// command should return code without running (help or a usage error).
func parseCommandLine(c *command, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (positional []string, code int, done bool) {
	positional, help, err := parseArgs(fs, args)
	if help {
		fmt.Fprint(stdout, c.usage)
		return nil, exitOK, true
	}
	if err != nil {
		return nil, fail(c, stderr, err), true
	}
	return positional, 0, false
}

// resourceTypes are the accepted spellings of the built-in types.
var resourceTypes = []struct {
	typeURL string
	aliases []string // lower case
}{
	{"type.googleapis.com/envoy.config.listener.v3.Listener", []string{"lds", "listener", "listeners"}},
	{"type.googleapis.com/envoy.config.route.v3.RouteConfiguration", []string{"rds", "route", "routes", "routeconfiguration"}},
	{"type.googleapis.com/envoy.config.cluster.v3.Cluster", []string{"cds", "cluster", "clusters"}},
	{"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", []string{"eds", "endpoint", "endpoints", "clusterloadassignment"}},
	{"type.googleapis.com/envoy.config.endpoint.v3.LbEndpointCollection", []string{"leds", "collection", "collections", "lbendpointcollection"}},
}

const typeForms = "lds|listener, rds|route, cds|cluster, eds|endpoint, leds|collection, or a full type URL such as type.googleapis.com/envoy.config.listener.v3.Listener"

// parseType turns a TYPE argument into a type URL: a short form (any
// case), a type URL, or a message name.
func parseType(s string) (string, error) {
	lower := strings.ToLower(strings.TrimSpace(s))
	for _, t := range resourceTypes {
		msg := registry.TypeName(t.typeURL)
		if slices.Contains(t.aliases, lower) || s == t.typeURL || s == msg {
			return t.typeURL, nil
		}
		// Type URLs may have any host: the part after the last '/' counts.
		if host, ok := strings.CutSuffix(s, "/"+msg); ok && strings.Contains(host, ".") {
			return t.typeURL, nil
		}
	}
	return "", usageErrorf("unknown resource type %q: want %s", s, typeForms)
}

// engineFlags are the flags of every command that starts an engine.
type engineFlags struct {
	bootstrap       string
	verbose         bool
	resourceTimeout time.Duration
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.bootstrap, "bootstrap", "", "gRPC xDS bootstrap file")
	fs.BoolVar(&f.verbose, "v", false, "log the engine's debug logs to stderr")
	fs.DurationVar(&f.resourceTimeout, "resource-timeout", 0, "does-not-exist timer (advanced)")
}

// loadBootstrap reads --bootstrap, or the environment as gRPC does.
func (f *engineFlags) loadBootstrap() (*bootstrap.Bootstrap, error) {
	if f.bootstrap != "" {
		data, err := os.ReadFile(f.bootstrap)
		if err != nil {
			return nil, fmt.Errorf("reading bootstrap: %w", err)
		}
		bs, err := bootstrap.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("bootstrap file %s:\n%w", f.bootstrap, err)
		}
		return bs, nil
	}
	bs, err := bootstrap.FromEnv()
	if errors.Is(err, bootstrap.ErrNotSet) {
		return nil, usageErrorf("no bootstrap: pass --bootstrap FILE, or set %s (a file) or %s (the JSON)",
			bootstrap.EnvFile, bootstrap.EnvConfig)
	}
	return bs, err
}

// newEngine starts an engine for the built-in types.
func (f *engineFlags) newEngine(target string, stderr io.Writer) (*engine.Engine, *registry.Registry, error) {
	if f.resourceTimeout < 0 {
		return nil, nil, usageErrorf("--resource-timeout must not be negative")
	}
	bs, err := f.loadBootstrap()
	if err != nil {
		return nil, nil, err
	}
	reg := builtin.Registry()
	cfg := engine.Config{
		Bootstrap:        bs,
		Registry:         reg,
		ResourceTimeout:  f.resourceTimeout,
		Target:           target,
		UserAgentName:    "xdsctl",
		UserAgentVersion: engine.Version,
	}
	if f.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e, err := engine.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("starting the xDS engine: %w", err)
	}
	return e, reg, nil
}

// engineForType parses a TYPE argument and starts an engine: how the
// commands that watch resources of one type begin.
func (f *engineFlags) engineForType(typeArg string, stderr io.Writer) (string, *engine.Engine, *registry.Registry, error) {
	typeURL, err := parseType(typeArg)
	if err != nil {
		return "", nil, nil, err
	}
	e, reg, err := f.newEngine("", stderr)
	if err != nil {
		return "", nil, nil, err
	}
	return typeURL, e, reg, nil
}

// dedupe returns names without repeats, in order.
func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
