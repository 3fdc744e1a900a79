package lastgood

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/xdstest"
)

// childEnv switches the test binary into a child process of a test
// (crash_test.go): its value names what the child does.
const childEnv = "LASTGOOD_TEST_CHILD"

func TestMain(m *testing.M) {
	if what := os.Getenv(childEnv); what != "" {
		os.Exit(runChild(what))
	}
	goleak.VerifyTestMain(m)
}

const (
	clusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	testServer  = "xds.example.com:443"
)

var testDigest = []byte("digest-of-node-and-bootstrap")

// storePath returns a path for a store in a new directory of the test.
func storePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "store")
}

// mustOpen opens a store, closed when the test ends if not before.
func mustOpen(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustLoad(t testing.TB, s *Store, digest []byte) storage.Loaded {
	t.Helper()
	l, err := s.Load(digest)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return l
}

func mustApply(t testing.TB, s *Store, digest []byte, changes ...storage.Change) {
	t.Helper()
	if err := s.Apply(digest, changes); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// received is the time the test resources were received: a fixed one,
// with nanoseconds, to check that they survive.
var received = time.Date(2026, 11, 27, 10, 11, 12, 123456789, time.UTC)

// smallCluster is the Cluster the engine's benchmarks send
// (xdstest.Cluster), marshalled: 37 bytes or so.
func smallCluster(i, version int) []byte {
	b, err := proto.Marshal(xdstest.Cluster(fmt.Sprintf("cluster-%05d", i), fmt.Sprintf("eds-%05d-%d", i, version)))
	if err != nil {
		panic(err)
	}
	return b
}

// meshCluster is a Cluster as a service mesh sends it, with a connect
// timeout, circuit breakers, outlier detection and TLS by SDS: about 300
// bytes.
func meshCluster(i, version int) []byte {
	name := fmt.Sprintf("outbound|8080||svc-%05d.ns-%d.svc.cluster.local", i, i%10)
	c := xdstest.Cluster(name, name)
	c.ConnectTimeout = durationpb.New(time.Second)
	c.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{
		MaxConnections: wrapperspb.UInt32(1024), MaxPendingRequests: wrapperspb.UInt32(1024),
		MaxRequests: wrapperspb.UInt32(1024), MaxRetries: wrapperspb.UInt32(3),
	}}}
	c.OutlierDetection = &clusterpb.OutlierDetection{
		Interval: durationpb.New(10 * time.Second), MaxEjectionPercent: wrapperspb.UInt32(uint32(version % 100)),
	}
	tls, err := anypb.New(&tlspb.UpstreamTlsContext{Sni: name, CommonTlsContext: &tlspb.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{Name: "default"}},
		ValidationContextType: &tlspb.CommonTlsContext_ValidationContextSdsSecretConfig{
			ValidationContextSdsSecretConfig: &tlspb.SdsSecretConfig{Name: "ROOTCA"},
		},
	}})
	if err != nil {
		panic(err)
	}
	c.TransportSocket = &corepb.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: tls}}
	b, err := proto.Marshal(c)
	if err != nil {
		panic(err)
	}
	return b
}

// clusterPut is a change that keeps Cluster i at version.
func clusterPut(i, version int, raw func(i, version int) []byte) storage.Change {
	return storage.Change{Resource: storage.Resource{
		Server:   testServer,
		TypeURL:  clusterType,
		Name:     fmt.Sprintf("cluster-%05d", i),
		Version:  fmt.Sprint(version),
		Raw:      raw(i, version),
		Received: received.Add(time.Duration(version) * time.Second),
	}}
}

func clusterDelete(i int) storage.Change {
	return storage.Change{Delete: true, Resource: storage.Resource{
		TypeURL: clusterType, Name: fmt.Sprintf("cluster-%05d", i),
	}}
}

// puts returns the resources of changes, as Load returns them.
func resourcesOf(changes ...storage.Change) []storage.Resource {
	var out []storage.Resource
	for _, c := range changes {
		if !c.Delete {
			out = append(out, c.Resource)
		}
	}
	return out
}

// diffResources compares resources in any order; the times by Equal,
// nil and empty Raw alike.
func diffResources(want, got []storage.Resource) string {
	if len(want) == 0 && len(got) == 0 || sameResources(want, got) {
		return ""
	}
	return cmp.Diff(want, got,
		cmp.Comparer(bytes.Equal),
		cmpopts.SortSlices(func(a, b storage.Resource) bool {
			if a.Authority != b.Authority {
				return a.Authority < b.Authority
			}
			if a.TypeURL != b.TypeURL {
				return a.TypeURL < b.TypeURL
			}
			return a.Name < b.Name
		}))
}

// sameResources is diffResources's answer when the resources are the
// same, without cmp's cost, which tests that compare thousands of states
// would pay; false sends diffResources to cmp for the difference.
func sameResources(want, got []storage.Resource) bool {
	if len(want) != len(got) || storedResourceFields != 8 {
		return false // a field sameResource does not compare
	}
	byKey := make(map[key]storage.Resource, len(want))
	for _, r := range want {
		byKey[key{authority: r.Authority, typeURL: r.TypeURL, name: r.Name}] = r
	}
	if len(byKey) != len(want) {
		return false
	}
	for _, r := range got {
		k := key{authority: r.Authority, typeURL: r.TypeURL, name: r.Name}
		w, ok := byKey[k]
		if !ok || !sameResource(w, r) {
			return false
		}
		delete(byKey, k)
	}
	return true
}

var storedResourceFields = reflect.TypeFor[storage.Resource]().NumField()

// sameResource compares two resources as diffResources does.
func sameResource(a, b storage.Resource) bool {
	return a.Authority == b.Authority && a.Server == b.Server && a.TypeURL == b.TypeURL && a.Name == b.Name &&
		a.Version == b.Version && bytes.Equal(a.Raw, b.Raw) && a.Received.Equal(b.Received) && a.Expires.Equal(b.Expires)
}

// TestSameResources: the shortcut says equal only when cmp finds no
// difference, field by field.
func TestSameResources(t *testing.T) {
	base := clusterPut(1, 1, smallCluster).Resource
	base.Expires = base.Received.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		change func(r *storage.Resource)
		same   bool
	}{
		{"the same", func(*storage.Resource) {}, true},
		{"times in another location", func(r *storage.Resource) { r.Received = r.Received.In(time.FixedZone("x", 3600)) }, true},
		{"authority", func(r *storage.Resource) { r.Authority = "a.example" }, false},
		{"server", func(r *storage.Resource) { r.Server = "other:443" }, false},
		{"type", func(r *storage.Resource) { r.TypeURL += "x" }, false},
		{"version", func(r *storage.Resource) { r.Version += "x" }, false},
		{"bytes", func(r *storage.Resource) { r.Raw = append([]byte{1}, r.Raw[1:]...) }, false},
		{"received", func(r *storage.Resource) { r.Received = r.Received.Add(1) }, false},
		{"expires", func(r *storage.Resource) { r.Expires = time.Time{} }, false},
	} {
		r := base
		tc.change(&r)
		want, got := []storage.Resource{base}, []storage.Resource{r}
		if same := sameResources(want, got); same != tc.same || same != (cmp.Diff(want, got, cmp.Comparer(bytes.Equal)) == "") {
			t.Errorf("%s: sameResources = %v, want %v, as cmp", tc.name, same, tc.same)
		}
	}
	// Renamed, it is another resource.
	r := base
	r.Name += "x"
	if sameResources([]storage.Resource{base}, []storage.Resource{r}) {
		t.Error("name: sameResources = true")
	}
	if sameResources([]storage.Resource{{Raw: nil}}, []storage.Resource{{Raw: []byte{}}}) != true {
		t.Error("nil and empty Raw differ")
	}
	if storedResourceFields != 8 {
		t.Errorf("storage.Resource has %d fields; sameResource compares 8: compare the new ones", storedResourceFields)
	}
}
