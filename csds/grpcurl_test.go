//go:build xdsengine_tools

// TestGrpcurl needs grpcurl, which a test must not download or build: a
// fresh machine's "go test ./..." would spend minutes on it, or fail
// offline. .ci/run installs the pinned grpcurl before the tests and runs
// this file with -tags xdsengine_tools; without the tag it is not built.

package csds_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// grpcurlModule is the grpcurl .ci/run installs. It is installed by
// version, outside this module, so it is not a dependency in go.mod.
const grpcurlModule = "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3"

// findGrpcurl returns the grpcurl named by $GRPCURL, else the one on
// PATH. Under the tag a missing grpcurl fails the test rather than
// skipping it, so that CI cannot pass without having run it.
func findGrpcurl(t *testing.T) string {
	t.Helper()
	const howTo = "install it as .ci/run does, with \"go install " + grpcurlModule + "\", and put the GOBIN " +
		"(default $(go env GOPATH)/bin) on PATH, or set GRPCURL to its path; or build without -tags xdsengine_tools"
	if p := os.Getenv("GRPCURL"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("GRPCURL=%s is not an executable grpcurl: %v; %s", p, err, howTo)
		}
		return path
	}
	path, err := exec.LookPath("grpcurl")
	if err != nil {
		t.Fatalf("grpcurl is not on PATH and GRPCURL is not set: %s", howTo)
	}
	return path
}

func runGrpcurl(t *testing.T, grpcurl string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, grpcurl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// grpcurlResponse is the part of grpcurl's JSON rendering of a
// ClientStatusResponse that the test checks. grpcurl prints proto JSON
// with lowerCamelCase names; the struct is written against that output,
// not generated from the proto, so it checks what the tool printed.
type grpcurlResponse struct {
	Config []struct {
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
		ClientScope       string `json:"clientScope"`
		GenericXdsConfigs []struct {
			TypeURL      string         `json:"typeUrl"`
			Name         string         `json:"name"`
			VersionInfo  string         `json:"versionInfo"`
			ClientStatus string         `json:"clientStatus"`
			XdsConfig    map[string]any `json:"xdsConfig"`
		} `json:"genericXdsConfigs"`
	} `json:"config"`
}

// TestGrpcurl calls the service with grpcurl, a client nobody here wrote,
// through server reflection alone: no proto files are given to it.
func TestGrpcurl(t *testing.T) {
	grpcurl := findGrpcurl(t)
	t.Logf("grpcurl: %s", grpcurl)

	srv := xdstest.NewServer(t, xdstest.Options{})
	serveTree(srv)
	e := newEngine(t, srv.Addr(), target, nil)
	rec := watchrec.New()
	defer e.Watch(lds.TypeURL, listenerName, rec)()
	if ev := rec.NextChanged(t); ev.Err != nil {
		t.Fatalf("watcher got %v, want the listener", ev)
	}
	_, addr := serveCSDS(t, csds.ForEngine(e), true)

	list := runGrpcurl(t, grpcurl, "-plaintext", addr, "list")
	for _, svc := range []string{"envoy.service.status.v3.ClientStatusDiscoveryService", "grpc.reflection.v1.ServerReflection"} {
		if !strings.Contains(list, svc) {
			t.Errorf("grpcurl list does not show %s:\n%s", svc, list)
		}
	}

	out := runGrpcurl(t, grpcurl, "-plaintext", addr, "envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus")
	t.Logf("grpcurl printed:\n%s", out)
	var resp grpcurlResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("grpcurl output is not the expected JSON: %v\n%s", err, out)
	}
	if len(resp.Config) != 1 {
		t.Fatalf("got %d configs, want 1:\n%s", len(resp.Config), out)
	}
	cc := resp.Config[0]
	if cc.ClientScope != target {
		t.Errorf("clientScope = %q, want %q", cc.ClientScope, target)
	}
	if cc.Node.ID != nodeID {
		t.Errorf("node.id = %q, want %q", cc.Node.ID, nodeID)
	}
	if len(cc.GenericXdsConfigs) != 1 {
		t.Fatalf("got %d resources, want the listener:\n%s", len(cc.GenericXdsConfigs), out)
	}
	g := cc.GenericXdsConfigs[0]
	if g.TypeURL != lds.TypeURL || g.Name != listenerName || g.ClientStatus != "ACKED" || g.VersionInfo != "1" {
		t.Errorf("resource = %s %q %s version %q, want %s %q ACKED version \"1\"", g.TypeURL, g.Name, g.ClientStatus, g.VersionInfo, lds.TypeURL, listenerName)
	}
	// grpcurl renders the Any as JSON only if reflection gave it the
	// Listener's descriptor; otherwise it would print opaque bytes.
	if g.XdsConfig["@type"] != lds.TypeURL || g.XdsConfig["name"] != listenerName {
		t.Errorf("xdsConfig = %v, want the Listener %q decoded through reflection", g.XdsConfig, listenerName)
	}
}
