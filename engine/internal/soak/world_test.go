package soak_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// The resources of the soak: listener-i → route-i → one of the clusters →
// its ClusterLoadAssignment, whose second locality is an LEDS collection.
// Routes move between clusters as the route generation grows, so the
// graph watches subscribe to and drop clusters as they go; clusters
// watchedClusters and above are watched only through the graphs, so that
// moving a route onto them makes a genuinely new, uncached subscription
// (which, while the primary is failing, is A71's reason to fall back).
const (
	numListeners    = 3
	numClusters     = 6
	watchedClusters = 4
	// ledsAuthority holds the LEDS collections. Its bootstrap entry has
	// fallback_on_reachability_only (A95), so it falls back even with
	// everything cached; the old-style names follow plain A71.
	ledsAuthority = "endpoints.example"
)

// Resource types, in dependency order; kinds index typeURLs.
const (
	kindLDS = iota
	kindRDS
	kindCDS
	kindEDS
	kindLEDS
	numKinds
)

var typeURLs = [numKinds]string{lds.TypeURL, rds.TypeURL, cds.TypeURL, eds.TypeURL, leds.TypeURL}

var kindNames = [numKinds]string{"LDS", "RDS", "CDS", "EDS", "LEDS"}

func kindOf(typeURL string) int {
	for k, u := range typeURLs {
		if u == typeURL {
			return k
		}
	}
	panic("soak: unknown type URL " + typeURL)
}

func listenerName(i int) string { return fmt.Sprintf("listener-%d", i) }
func routeName(i int) string    { return fmt.Sprintf("route-%d", i) }
func clusterName(j int) string  { return fmt.Sprintf("cluster-%d", j) }
func edsName(j int) string      { return fmt.Sprintf("eds-%d", j) }
func collectionName(j int) string {
	return fmt.Sprintf("xdstp://%s/envoy.config.endpoint.v3.LbEndpointCollection/svc-%d/z2", ledsAuthority, j)
}

// names lists the resource names of a kind, in order.
func names(kind int) []string {
	var out []string
	switch kind {
	case kindLDS, kindRDS:
		for i := range numListeners {
			out = append(out, [...]func(int) string{listenerName, routeName}[kind](i))
		}
	default:
		for j := range numClusters {
			out = append(out, [...]func(int) string{clusterName, edsName, collectionName}[kind-kindCDS](j))
		}
	}
	return out
}

// routeTarget is the cluster route i points at in route generation gen:
// every few generations each route moves to the next cluster.
func routeTarget(i, gen int) int { return (2*i + gen/4) % numClusters }

// Tags tell who published a resource: each server's content differs, so
// a watcher's resource says where it came from, and the final state,
// published on both, differs from everything before it.
const (
	tagPrimary  = 1
	tagFallback = 2
	tagFinal    = 3
)

// oversizeBytes pads a resource past the engine's MaxResponseBytes.
const (
	maxResponseBytes = 256 << 10
	oversizeBytes    = 300 << 10
)

// contentFaults are the faults that change what a server publishes.
type contentFaults struct {
	// invalid resources are published in a form the engine rejects.
	invalid map[registry.Ref]bool
	// oversize kinds get one resource padded past maxResponseBytes, so
	// that any response of that kind is too large to read.
	oversize map[int]bool
	// deleted resources are left out.
	deleted map[registry.Ref]bool
}

// build returns the resources of kind, published by the server tagged
// tag, in generation gen (route targets follow rdsGen).
func build(kind, tag, gen, rdsGen int, f contentFaults) []xdstest.Resource {
	var out []xdstest.Resource
	stat := fmt.Sprintf("t%d-g%d", tag, gen)
	port := func(j, k int) string {
		return fmt.Sprintf("10.%d.%d.%d:%d", tag, j, k, 1024+gen%60000)
	}
	for idx, name := range names(kind) {
		ref := registry.Ref{TypeURL: typeURLs[kind], Name: name}
		if f.deleted[ref] {
			continue
		}
		bad := f.invalid[ref]
		// The first resource of the kind carries the padding: every
		// response of the kind includes it (LDS and CDS are full state,
		// and every resource is watched, individually or by a graph,
		// or at least by both for the first one).
		big := f.oversize[kind] && idx == 0
		var msg proto.Message
		switch kind {
		case kindLDS:
			l := xdstest.Listener(name, routeName(idx))
			if bad {
				// Only API listeners are supported by a client.
				l = &listenerpb.Listener{Name: name}
			}
			l.StatPrefix = stat
			if big {
				l.StatPrefix += strings.Repeat("x", oversizeBytes)
			}
			msg = l
		case kindRDS:
			rc := xdstest.RouteConfig(name, clusterName(routeTarget(idx, rdsGen)))
			rc.VirtualHosts[0].Name = stat
			if bad {
				// A virtual host must have domains.
				rc.VirtualHosts[0].Domains = nil
			}
			msg = rc
		case kindCDS:
			c := xdstest.Cluster(name, edsName(idx))
			c.AltStatName = stat
			if bad {
				// gRPC clients support EDS, LOGICAL_DNS and aggregate clusters.
				c.ClusterDiscoveryType = &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}
			}
			if big {
				c.AltStatName += strings.Repeat("x", oversizeBytes)
			}
			msg = c
		case kindEDS:
			z1 := xdstest.Locality{Zone: "z1", Endpoints: []string{port(idx, 1)}}
			if bad {
				// Priorities must be contiguous from 0; z2 has 0.
				z1.Priority = 2
			}
			msg = xdstest.ClusterLoadAssignment(name, z1, xdstest.Locality{Zone: "z2", Collection: collectionName(idx)})
		case kindLEDS:
			eps := []string{port(idx, 2), port(idx, 3)}
			if big {
				// About 60 bytes an entry.
				for n := 0; n < oversizeBytes/50; n++ {
					eps = append(eps, fmt.Sprintf("10.%d.%d.%d:%d", tag, 100+n/65536%100, n/256%256, 1+n%256))
				}
			}
			coll := xdstest.Collection(eps...)
			if bad {
				// A95 accepts only inline entries.
				coll.Entries = append(coll.Entries, &xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_Locator{
					Locator: &xdscorepb.ResourceLocator{Id: "elsewhere"},
				}})
			}
			msg = coll
		}
		if kind == kindLEDS {
			out = append(out, xdstest.Wrapped(name, msg))
		} else {
			out = append(out, xdstest.R(name, msg))
		}
	}
	return out
}

// world is the state of the world the driver publishes: a generation per
// kind, shared by both servers, and each server's content faults.
type world struct {
	mu sync.Mutex
	// gens counts each kind's publications; content is a function of it.
	gens  [numKinds]int
	final bool
	// published counts Set and Update calls, per server.
	published map[*server]int
}

// server is one management server of the soak and the proxy in front of
// it; the engine only knows the proxy's address.
type server struct {
	name  string
	tag   int
	cp    *xdstest.Server
	proxy *tcpproxy.Proxy
	// Content faults; guarded by world.mu.
	faults contentFaults
	// tp3 are the TP3 errors in effect, by kind and name; guarded by
	// world.mu.
	tp3 [numKinds]map[string]*rpcstatus.Status
	// versions are the version each kind got in its last publication;
	// guarded by world.mu.
	versions [numKinds]string
}

// resourcesLocked returns what s publishes of kind now.
func (w *world) resourcesLocked(s *server, kind int) []xdstest.Resource {
	tag, f := s.tag, s.faults
	if w.final {
		tag, f = tagFinal, contentFaults{}
	}
	return build(kind, tag, w.gens[kind], w.gens[kindRDS], f)
}

// setLocked publishes every kind on s (one version for all).
func (w *world) setLocked(s *server) {
	var all []xdstest.Resource
	for k := range numKinds {
		all = append(all, w.resourcesLocked(s, k)...)
	}
	s.cp.Set(all...)
	w.published[s]++
	for k := range numKinds {
		s.versions[k] = s.cp.Version()
	}
}

// updateLocked publishes kind on s.
func (w *world) updateLocked(s *server, kind int) {
	s.cp.Update(typeURLs[kind], w.resourcesLocked(s, kind)...)
	w.published[s]++
	s.versions[kind] = s.cp.Version()
}

// version returns the version of kind s published last.
func (w *world) version(s *server, kind int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return s.versions[kind]
}

// expected returns what every watcher must hold once the engine has caught
// up, faults aside: the final state once published, the primary's before
// (which is what the engine holds before the first fault).
func (w *world) expected() map[registry.Ref]proto.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	tag := tagPrimary
	if w.final {
		tag = tagFinal
	}
	out := make(map[registry.Ref]proto.Message)
	for k := range numKinds {
		for _, r := range build(k, tag, w.gens[k], w.gens[kindRDS], contentFaults{}) {
			out[registry.Ref{TypeURL: typeURLs[k], Name: r.Name}] = r.Message
		}
	}
	return out
}

// reachable returns the resources a graph from listener i holds in the
// final state.
func (w *world) reachable(i int) []registry.Ref {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := routeTarget(i, w.gens[kindRDS])
	return []registry.Ref{
		{TypeURL: lds.TypeURL, Name: listenerName(i)},
		{TypeURL: rds.TypeURL, Name: routeName(i)},
		{TypeURL: cds.TypeURL, Name: clusterName(j)},
		{TypeURL: eds.TypeURL, Name: edsName(j)},
		{TypeURL: leds.TypeURL, Name: collectionName(j)},
	}
}

// TestWorldResources checks the soak's own resources, so that a soak
// failure is never the soak's: valid ones decode, each invalid one is
// rejected by its type, padded ones are over the response limit and the
// normal ones far under it.
func TestWorldResources(t *testing.T) {
	reg := builtin.Registry()
	for k := range numKinds {
		typ, ok := reg.Lookup(typeURLs[k])
		if !ok {
			t.Fatalf("%s not in the builtin registry", kindNames[k])
		}
		decode := func(r xdstest.Resource) error {
			raw, err := proto.Marshal(r.Message)
			if err != nil {
				t.Fatal(err)
			}
			opts := registry.DecodeOptions{}
			if r.Wrap {
				opts.WrapperName = r.Name
			}
			res, err := typ.Decode(raw, opts)
			if err == nil && res.Name != r.Name {
				t.Errorf("%s %s decodes with name %q", kindNames[k], r.Name, res.Name)
			}
			return err
		}
		valid := build(k, tagPrimary, 7, 7, contentFaults{})
		size := 0
		for _, r := range valid {
			if err := decode(r); err != nil {
				t.Errorf("%s %s: %v", kindNames[k], r.Name, err)
			}
			size += proto.Size(r.Message)
		}
		if size > maxResponseBytes/10 {
			t.Errorf("%s resources take %d bytes, too close to the limit", kindNames[k], size)
		}
		invalid := contentFaults{invalid: map[registry.Ref]bool{}}
		for _, n := range names(k) {
			invalid.invalid[registry.Ref{TypeURL: typeURLs[k], Name: n}] = true
		}
		for _, r := range build(k, tagPrimary, 7, 7, invalid) {
			if err := decode(r); err == nil {
				t.Errorf("%s %s: the invalid form decodes", kindNames[k], r.Name)
			} else if k == kindLDS && r.Name == listenerName(0) {
				t.Logf("e.g. %s: %v", kindNames[k], err)
			}
		}
		if k == kindLDS || k == kindCDS || k == kindLEDS {
			big := build(k, tagPrimary, 7, 7, contentFaults{oversize: map[int]bool{k: true}})
			if err := decode(big[0]); err != nil {
				t.Errorf("padded %s: %v", kindNames[k], err)
			}
			if n := proto.Size(big[0].Message); n <= maxResponseBytes {
				t.Errorf("padded %s is %d bytes, not over the %d-byte limit", kindNames[k], n, maxResponseBytes)
			}
		}
	}
}
