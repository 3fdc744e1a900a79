package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/cds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	want := `server: version 1 of policy "checkout": 100 per second
watcher: checkout = 100 requests per second, enforced by cluster "ratelimit-service"
watcher: checkout depends on Cluster "ratelimit-service"

server: version 2: 20 per minute
watcher: checkout = 20 requests per minute, enforced by cluster "ratelimit-service"

server: version 3: 0 per fortnight (invalid)
watcher: ambient error, code InvalidArgument, kind NACK: invalid resource: requests_per_unit: must be at least 1, got 0; unit: must be "second", "minute" or "hour", got "fortnight"
watcher: keeps using checkout = 20 requests per minute, enforced by cluster "ratelimit-service"
server: NACK, client stays at version 2: xDS response validation errors: [resource index 0, name "checkout": requests_per_unit: must be at least 1, got 0; unit: must be "second", "minute" or "hour", got "fortnight"]
CSDS: checkout NACKED, cached version 2 (20 requests per minute, enforced by cluster "ratelimit-service"), rejected version 3
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}

// TestConformance runs the library's conformance kit on the type: it
// registers, reports names even for invalid resources, decodes
// deterministically, has a reflexive Equal, well-formed dependencies, and
// a decoder that fails cleanly on garbage.
func TestConformance(t *testing.T) {
	s := func(m map[string]any) *structpb.Struct {
		t.Helper()
		st, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	registrytest.Run(t, RateLimitPolicyType, []registrytest.Case{{
		Name:     "valid",
		Message:  s(map[string]any{"name": "checkout", "cluster": "rls", "requests_per_unit": 100, "unit": "second"}),
		WantName: "checkout",
		WantDeps: []registry.Ref{{TypeURL: cds.TypeURL, Name: "rls"}},
	}, {
		Name:     "every broken rule is reported",
		Message:  s(map[string]any{"name": "checkout", "requests_per_unit": 0, "unit": "fortnight"}),
		WantName: "checkout",
		WantErr:  "cluster: must name|requests_per_unit: must be at least 1, got 0|unit: must be",
	}, {
		Name:     "wrong JSON type",
		Message:  s(map[string]any{"name": "checkout", "cluster": "rls", "requests_per_unit": "100", "unit": "second"}),
		WantName: "checkout",
		WantErr:  "requests_per_unit: must be a whole number",
	}, {
		Name:     "fraction",
		Message:  s(map[string]any{"name": "checkout", "cluster": "rls", "requests_per_unit": 1.5, "unit": "second"}),
		WantName: "checkout",
		WantErr:  "requests_per_unit: must be a whole number",
	}, {
		Name:    "no name",
		Message: s(map[string]any{"cluster": "rls", "requests_per_unit": 1, "unit": "second"}),
		WantErr: "name: must be a non-empty string",
	}, {
		Name:     "name from the wrapper",
		Message:  s(map[string]any{"cluster": "rls", "requests_per_unit": 1, "unit": "second"}),
		Options:  registry.DecodeOptions{WrapperName: "checkout"},
		WantName: "checkout",
	}, {
		Name:    "not a Struct",
		Raw:     []byte{0x0a, 0x03, 'a'},
		WantErr: "not a google.protobuf.Struct",
	}})
}
