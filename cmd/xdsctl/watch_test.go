package main

import (
	"regexp"
	"strings"
	"testing"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// TestWatch follows one Listener through an update, a NACKed update and a
// deletion, then stops as on SIGINT.
func TestWatch(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")))
	bs := writeBootstrap(t, srv.Addr())

	b := runBackground(t, "watch", "--bootstrap", bs, "lds", "listener.example")

	// 1. The first version, as protojson under its header.
	at := waitFor(t, &b.stdout, 0,
		`UPDATE Listener "listener.example" version="1" state=ACKED`+"\n{\n",
		`"name": "listener.example"`,
		`"routeConfigName": "route-1"`,
		"\n}\n")
	if !regexp.MustCompile(`(?m)^=== \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\S* UPDATE Listener "listener.example" version="1" state=ACKED$`).MatchString(b.stdout.String()) {
		t.Errorf("no header line of the expected form in:\n%s", b.stdout.String())
	}

	// 2. A new version.
	srv.Update(lds.TypeURL, xdstest.R("listener.example", xdstest.Listener("listener.example", "route-2")))
	at = waitFor(t, &b.stdout, at,
		`UPDATE Listener "listener.example" version="2" state=ACKED`,
		`"routeConfigName": "route-2"`)

	// 3. An invalid version is NACKed: an ambient error, the last good
	// version stays.
	srv.Update(lds.TypeURL, xdstest.R("listener.example", &listenerpb.Listener{Name: "listener.example"}))
	at = waitFor(t, &b.stdout, at,
		`AMBIENT ERROR Listener "listener.example" version="2" state=NACKED failed_version="3"`+"\n",
		`INVALID_ARGUMENT: Listener resource "listener.example": `,
		"api_listener",
		"(node ID: "+testNodeID+")\n")

	// 4. The next good version is printed as usual.
	srv.Update(lds.TypeURL, xdstest.R("listener.example", xdstest.Listener("listener.example", "route-4")))
	waitFor(t, &b.stdout, at, `version="4" state=ACKED`, `"routeConfigName": "route-4"`)

	if code := b.stop(t); code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", code, b.stderr.String())
	}
	if s := b.stderr.String(); s != "" {
		t.Errorf("stderr not empty without --v:\n%s", s)
	}
	t.Logf("watch output:\n%s", b.stdout.String())
}

// TestWatchResourceError prints a resource error with its status code: a
// name the bootstrap has no authority for, and a cluster that does not
// exist.
func TestWatchResourceError(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("c1", xdstest.Cluster("c1", "eds-1")))
	bs := writeBootstrap(t, srv.Addr())

	b := runBackground(t, "watch", "--bootstrap", bs, "--resource-timeout", "200ms",
		cds.TypeURL, "c1", "missing", "xdstp://unknown.example/envoy.config.cluster.v3.Cluster/c")
	waitFor(t, &b.stdout, 0, `UPDATE Cluster "c1" version="1" state=ACKED`)
	waitFor(t, &b.stdout, 0, `RESOURCE ERROR Cluster "missing" version="" state=DOES_NOT_EXIST`+"\nNOT_FOUND: ")
	waitFor(t, &b.stdout, 0, `RESOURCE ERROR Cluster "xdstp://unknown.example/envoy.config.cluster.v3.Cluster/c" state=NOT_CACHED`+
		"\nFAILED_PRECONDITION: ", `authority "unknown.example" is not in the bootstrap`)
	if code := b.stop(t); code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", code, b.stderr.String())
	}
}

// TestWatchVerbose sends the engine's logs to stderr.
func TestWatchVerbose(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")))
	bs := writeBootstrap(t, srv.Addr())

	b := runBackground(t, "watch", "lds", "listener.example", "--v", "--bootstrap", bs)
	waitFor(t, &b.stdout, 0, `UPDATE Listener "listener.example" version="1" state=ACKED`)
	if code := b.stop(t); code != exitOK {
		t.Fatalf("exit status %d, want 0", code)
	}
	if s := b.stderr.String(); !strings.Contains(s, "level=DEBUG") {
		t.Errorf("stderr has no debug log with --v:\n%s", s)
	}
}
