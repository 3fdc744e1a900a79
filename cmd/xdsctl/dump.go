package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

const dumpUsage = `Usage:
  xdsctl dump [--bootstrap FILE] [--wait 2s] [--v] TYPE NAME...
  xdsctl dump --csds ADDR [--timeout 10s]

The first form starts a client from the bootstrap, watches each NAME of
TYPE until every one has resolved (arrived, or failed) or --wait passes,
and prints the client's CSDS view: an envoy.service.status.v3.ClientConfig
as protojson, with each resource's gRFC A88 cache state (REQUESTED,
DOES_NOT_EXIST, ACKED, NACKED, RECEIVED_ERROR, TIMEOUT), version, the
resource itself and its last error. When --wait passes first, the dump is
printed all the same and stderr names the resources still awaited.

The second form asks a running xDS client for its CSDS view over
plaintext gRPC (envoy.service.status.v3.ClientStatusDiscoveryService/
FetchClientStatus) and prints the ClientStatusResponse as protojson: one
ClientConfig per xDS client in that process.

Flags:
  --bootstrap FILE        gRPC xDS bootstrap file; default $GRPC_XDS_BOOTSTRAP,
                          else the JSON in $GRPC_XDS_BOOTSTRAP_CONFIG
  --wait DUR              longest wait for the resources (default 2s)
  --csds ADDR             host:port of a client's CSDS service
  --timeout DUR           deadline of the CSDS call (default 10s)
  --v                     log the xDS engine's debug logs to stderr
  --resource-timeout DUR  (advanced) does-not-exist timer; default 15s

Examples:
  xdsctl dump --bootstrap bootstrap.json --wait 5s cds cluster-a cluster-b
  xdsctl dump --csds localhost:9901 | jq '.config[].genericXdsConfigs[] | {name, clientStatus}'

Exit status: 0 printed, 1 failure (bootstrap, CSDS call), 2 usage error.
`

func runDump(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.name)
	var ef engineFlags
	ef.register(fs)
	wait := fs.Duration("wait", 2*time.Second, "longest wait for the resources")
	csdsAddr := fs.String("csds", "", "host:port of a client's CSDS service")
	timeout := fs.Duration("timeout", 10*time.Second, "deadline of the CSDS call")
	pos, code, done := parseCommandLine(c, fs, args, stdout, stderr)
	if done {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if set["csds"] {
		for _, name := range []string{"bootstrap", "wait", "resource-timeout"} {
			if set[name] {
				return fail(c, stderr, usageErrorf("--%s does not go with --csds", name))
			}
		}
		if len(pos) > 0 {
			return fail(c, stderr, usageErrorf("--csds takes no TYPE or NAME, got %q", strings.Join(pos, " ")))
		}
		if *csdsAddr == "" {
			return fail(c, stderr, usageErrorf("--csds needs an address (host:port)"))
		}
		if *timeout <= 0 {
			return fail(c, stderr, usageErrorf("--timeout must be positive"))
		}
		resp, err := fetchCSDS(ctx, *csdsAddr, *timeout)
		if err != nil {
			return fail(c, stderr, err)
		}
		return printMessage(c, stdout, stderr, resp)
	}

	if set["timeout"] {
		return fail(c, stderr, usageErrorf("--timeout goes with --csds; use --wait"))
	}
	if len(pos) < 2 {
		return fail(c, stderr, usageErrorf("want TYPE and at least one NAME (or --csds ADDR), got %d argument(s)", len(pos)))
	}
	if *wait < 0 {
		return fail(c, stderr, usageErrorf("--wait must not be negative"))
	}
	typeURL, e, reg, err := ef.engineForType(pos[0], stderr)
	if err != nil {
		return fail(c, stderr, err)
	}
	defer e.Close()

	names := dedupe(pos[1:])
	resolved := make(chan string, len(names))
	for _, name := range names {
		var once sync.Once
		cancel := e.Watch(typeURL, name, engine.WatcherFuncs{
			ResourceChanged: func(_ registry.Resource, _ error, done func()) {
				done()
				once.Do(func() { resolved <- name })
			},
		})
		defer cancel()
	}
	waitPassed, stopWait := startWait(*wait)
	defer stopWait()
waiting:
	for remaining := len(names); remaining > 0; remaining-- {
		select {
		case <-resolved:
		case <-waitPassed:
			fmt.Fprintf(stderr, "xdsctl dump: --wait %v passed; %s\n", *wait, awaited(reg, e.Dump()))
			break waiting
		case <-ctx.Done():
			return fail(c, stderr, fmt.Errorf("interrupted"))
		}
	}
	return printMessage(c, stdout, stderr, e.Dump())
}

// startWait starts the --wait timer. It is a variable so that a test can
// add a condition to the end of the wait: whether a resource arrives
// within a fixed wall-clock bound is a race that a loaded machine loses.
var startWait = func(d time.Duration) (passed <-chan time.Time, stop func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

func printMessage(c *command, stdout, stderr io.Writer, m proto.Message) int {
	b, err := marshalJSON(m)
	if err != nil {
		return fail(c, stderr, fmt.Errorf("printing %s: %w", m.ProtoReflect().Descriptor().FullName(), err))
	}
	if _, err := stdout.Write(b); err != nil {
		return fail(c, stderr, err)
	}
	return exitOK
}

// fetchCSDS calls FetchClientStatus on addr over plaintext gRPC.
func fetchCSDS(ctx context.Context, addr string, timeout time.Duration) (*statuspb.ClientStatusResponse, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("CSDS address %q: %w", addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := statuspb.NewClientStatusDiscoveryServiceClient(conn).FetchClientStatus(ctx, &statuspb.ClientStatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("FetchClientStatus from %s: %s", addr, errorLine(err))
	}
	return resp, nil
}
