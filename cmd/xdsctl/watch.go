package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

const watchUsage = `Usage: xdsctl watch [--bootstrap FILE] [--v] TYPE NAME...

Watches each NAME of TYPE and prints every event until interrupted
(SIGINT or SIGTERM, then exit status 0). Each event starts with a header
line, and the version and cache state in it are the client's (its CSDS
view) when the event arrives:

  === TIME UPDATE TYPE "NAME" version="V" state=ACKED
  { the resource as protojson }
  === TIME AMBIENT ERROR TYPE "NAME" version="V" state=NACKED failed_version="W"
  INVALID_ARGUMENT: why the update was rejected; the last resource stays in use
  === TIME AMBIENT ERROR CLEARED TYPE "NAME" version="V" state=ACKED
  === TIME RESOURCE ERROR TYPE "NAME" version="" state=DOES_NOT_EXIST
  NOT_FOUND: why the resource cannot be used

An ambient error leaves the last resource in use (a NACK, an unreachable
server); a resource error means the resource must not be used (gRFC A88).

TYPE: lds|listener, rds|route, cds|cluster, eds|endpoint, leds|collection,
or a full type URL.

Flags:
  --bootstrap FILE        gRPC xDS bootstrap file; default $GRPC_XDS_BOOTSTRAP,
                          else the JSON in $GRPC_XDS_BOOTSTRAP_CONFIG
  --v                     log the xDS engine's debug logs to stderr
  --resource-timeout DUR  (advanced) does-not-exist timer; default 15s

Examples:
  xdsctl watch --bootstrap bootstrap.json lds listener.example.com
  xdsctl watch --bootstrap bootstrap.json cds cluster-a cluster-b

Exit status: 0 when interrupted, 1 on failure to start, 2 on a usage error.
`

func runWatch(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.name)
	var ef engineFlags
	ef.register(fs)
	pos, code, done := parseCommandLine(c, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) < 2 {
		return fail(c, stderr, usageErrorf("want TYPE and at least one NAME, got %d argument(s)", len(pos)))
	}
	typeURL, e, reg, err := ef.engineForType(pos[0], stderr)
	if err != nil {
		return fail(c, stderr, err)
	}
	p := &watchPrinter{e: e, typeURL: typeURL, typeName: reg.ShortName(typeURL), out: stdout}
	var cancels []func()
	for _, name := range dedupe(pos[1:]) {
		cancels = append(cancels, e.Watch(typeURL, name, engine.WatcherFuncs{
			ResourceChanged: func(r registry.Resource, err error, done func()) {
				defer done()
				p.changed(name, r, err)
			},
			AmbientError: func(err error, done func()) {
				defer done()
				p.ambient(name, err)
			},
		}))
	}
	<-ctx.Done()
	for _, cancel := range cancels {
		cancel()
	}
	if err := e.Close(); err != nil {
		fmt.Fprintf(stderr, "xdsctl watch: closing the engine: %v\n", err)
	}
	return exitOK
}

// watchPrinter prints watch events. Its methods run on the engine's
// callback goroutine, one at a time.
type watchPrinter struct {
	e        *engine.Engine
	typeURL  string
	typeName string
	out      io.Writer
}

// header starts an event: the time, the event, the resource and the
// client's cache state for it right now.
func (p *watchPrinter) header(b *bytes.Buffer, event, name string) {
	state := stateSummary(findConfig(p.e.Dump(), p.typeURL, name))
	fmt.Fprintf(b, "=== %s %s %s %q %s\n", time.Now().Format("2006-01-02T15:04:05.000Z07:00"), event, p.typeName, name, state)
}

func (p *watchPrinter) changed(name string, r registry.Resource, err error) {
	var b bytes.Buffer
	if err != nil {
		p.header(&b, "RESOURCE ERROR", name)
		b.WriteString(errorLine(err) + "\n")
	} else {
		p.header(&b, "UPDATE", name)
		b.Write(resourceJSON(r))
	}
	_, _ = p.out.Write(b.Bytes())
}

func (p *watchPrinter) ambient(name string, err error) {
	var b bytes.Buffer
	if err == nil {
		p.header(&b, "AMBIENT ERROR CLEARED", name)
	} else {
		p.header(&b, "AMBIENT ERROR", name)
		b.WriteString(errorLine(err) + "\n")
	}
	_, _ = p.out.Write(b.Bytes())
}

// resourceJSON prints a decoded resource as the server sent it, when its
// type can give its proto, else with %+v.
func resourceJSON(r registry.Resource) []byte {
	if pr, ok := r.(interface{ Proto() proto.Message }); ok {
		b, err := marshalJSON(pr.Proto())
		if err != nil {
			return fmt.Appendf(nil, "(cannot print as JSON: %v)\n%+v\n", err, r)
		}
		return b
	}
	return fmt.Appendf(nil, "%+v\n", r)
}
