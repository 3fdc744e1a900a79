package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstart runs the quickstart as `go run` would, once per
// protocol variant, and checks its story: resolution, update, fallback,
// return, within 15 s.
func TestQuickstart(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) { testQuickstart(t, delta) })
	}
}

func testQuickstart(t *testing.T, delta bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	if err := run(ctx, &out, delta); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("quickstart took %v:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	for _, want := range []string{
		"Listener quickstart.example: RDS route-1",
		"LbEndpointCollection xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/z2: 2 endpoints",
		"resolved Listener quickstart.example → RouteConfiguration route-1 → Cluster backend → endpoints [10.0.1.1:8080 10.0.2.1:8080 10.0.2.2:8080]",
		"endpoints now [10.0.1.1:8080 10.0.2.1:8080 10.0.2.2:8080 10.0.2.3:8080]",
		"fallback took over the endpoints after",
		"[10.9.1.1:8080 10.9.2.1:8080]",
		"outage: xDS stream failed with no responses received",
		"primary is back after",
		"fallback stream closed",
		"done",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// One line per outage: the primary's failure is every resource's, and
	// is told once.
	if n := strings.Count(out.String(), "xDS stream failed"); n != 1 {
		t.Errorf("the outage is told %d times, want once", n)
	}
	if strings.Contains(out.String(), "resolution note") {
		t.Error("output still speaks of a resolution note")
	}
}
