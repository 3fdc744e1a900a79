package engine

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// What an engine runs with, derived from its Config and checked once in
// New: the resource types on under the switches and the client features
// they add, the node, the server features known by name, what each
// server's "server_features" come to and its does-not-exist timer, the
// authorities' servers, the switches, the certificate provider
// instances, and the default backoff. None of it needs the engine's
// state.

// checkConfig rejects a configuration an engine cannot run with, naming the
// field of engine.Config at fault.
func checkConfig(reg *registry.Registry, bs *bootstrap.Bootstrap, maxResponseBytes int) error {
	if reg == nil || reg.Len() == 0 {
		return errors.New("engine: Config.Registry must hold at least one resource type")
	}
	if bs == nil {
		return errors.New("engine: Config.Bootstrap is required")
	}
	if len(bs.Servers) == 0 {
		return errors.New("engine: Config.Bootstrap.Servers must list at least one xDS server")
	}
	for i, s := range bs.Servers {
		if s.URI == "" {
			return fmt.Errorf("engine: Config.Bootstrap.Servers[%d]: empty URI", i)
		}
	}
	if maxResponseBytes < 0 {
		return fmt.Errorf("engine: Config.MaxResponseBytes: %d is negative", maxResponseBytes)
	}
	for name, a := range bs.Authorities {
		for i, s := range a.Servers {
			if s.URI == "" {
				return fmt.Errorf("engine: Config.Bootstrap.Authorities[%q].Servers[%d]: empty URI", name, i)
			}
		}
	}
	return nil
}

// typeSet is the resource types an engine watches, by type URL.
type typeSet map[string]*registry.ResourceType

// lookup returns the type of typeURL, if it is in the set.
func (ts typeSet) lookup(typeURL string) (*registry.ResourceType, bool) {
	t := ts[typeURL]
	return t, t != nil
}

// enabledTypes returns the registry's types that are on under the switches, by
// type URL, and the client features they add, in the registry's order.
func enabledTypes(reg *registry.Registry, sw features.Switches) (typeSet, []string) {
	types := make(typeSet, reg.Len())
	var clientFeatures []string
	for _, u := range reg.TypeURLs() {
		if t, _ := reg.Lookup(u); t.EnabledUnder(sw) {
			types[u] = &t
			clientFeatures = append(clientFeatures, t.ClientFeatures...)
		}
	}
	return types, clientFeatures
}

// knownFeatures returns the server features known by name: the built-in ones
// (those before gRFC A88 when the switches turn data error handling
// off), delta_xds, then own, which win a name clash.
func knownFeatures(sw features.Switches, own []features.ServerFeature) []features.ServerFeature {
	builtin := features.Builtin
	if sw.DisableDataErrorHandling {
		builtin = features.LegacyBuiltin
	}
	return append(builtin(), append([]features.ServerFeature{features.DeltaXDS}, own...)...)
}

// serverInfo returns what the server's features come to, and the names
// ignored, which no known feature has (gRFC A27).
func serverInfo(s bootstrap.ServerConfig, known []features.ServerFeature) (info registry.ServerInfo, ignored []string) {
	fs := features.Resolve(s.ServerFeatures, known...)
	info = registry.ServerInfo{URI: s.URI, Features: fs, Delta: s.Delta || fs.Has(features.NameDeltaXDS)}
	return info, slices.DeleteFunc(slices.Clone(s.ServerFeatures), fs.Has)
}

// serverTimer returns a server's does-not-exist timer (gRFC A88: its features
// say how long, and whether expiry is transient), its length overridden
// by a positive override.
func serverTimer(fs features.Set, override time.Duration) features.Timer {
	t := fs.ResourceTimer(features.DefaultTimer)
	if override > 0 {
		t.Timeout = override
	}
	return t
}

// authoritySetup is an authority's part of the bootstrap, under the switches.
type authoritySetup struct {
	Name             string
	Servers          []bootstrap.ServerConfig // by priority; only the first with fallback off
	ReachabilityOnly bool                     // fallback_on_reachability_only, unless endpoint fallback is off
}

// authoritiesOf returns the authority of old-style names (named "", with
// the top-level servers) and hands each of the bootstrap's to add; one
// that lists no server uses the top-level ones (gRFC A47). A callback,
// not a map: the engine keeps its own, and New is not to allocate twice.
func authoritiesOf(bs *bootstrap.Bootstrap, sw features.Switches, add func(authoritySetup)) (oldStyle authoritySetup) {
	authority := func(name string, servers []bootstrap.ServerConfig, reachabilityOnly bool) authoritySetup {
		if sw.DisableFallback && len(servers) > 1 {
			servers = servers[:1]
		}
		return authoritySetup{Name: name, Servers: servers, ReachabilityOnly: reachabilityOnly && !sw.DisableEndpointFallback}
	}
	for name, a := range bs.Authorities {
		servers := a.Servers
		if len(servers) == 0 {
			servers = bs.Servers
		}
		add(authority(name, servers, a.FallbackOnReachabilityOnly))
	}
	return authority("", bs.Servers, false)
}

// switchesOf returns the configured switches, or, when none are,
// gRPC's environment's.
func switchesOf(configured *features.Switches) features.Switches {
	if configured != nil {
		return *configured
	}
	return features.SwitchesFromEnv()
}

// certificateProvidersOf returns the test that a certificate provider
// instance is in the bootstrap, or nil (no test) when ignore is set.
func certificateProvidersOf(bs *bootstrap.Bootstrap, ignore bool) func(name string) bool {
	if ignore {
		return nil
	}
	// A copy: the streams' goroutines read it while decoding.
	names := maps.Clone(bs.CertificateProviders)
	return func(name string) bool { _, ok := names[name]; return ok }
}

// defaultBackoff is gRPC's connection backoff (doc/connection-backoff.md) before
// the n-th retry, from 0: 1 s, growing ×1.6 to at most 120 s, with ±20 %
// jitter so that clients that lost the same server do not return in
// lockstep.
func defaultBackoff(n int) time.Duration {
	const (
		base       = time.Second
		max        = 120 * time.Second
		multiplier = 1.6
		jitter     = 0.2
	)
	d := min(float64(base)*math.Pow(multiplier, float64(n)), float64(max))
	d *= 1 + jitter*(rand.Float64()*2-1)
	return time.Duration(d)
}

// Client features every engine advertises (gRFC A27, and the
// envoy.service.discovery.v3.Resource wrapper in SotW).
const (
	clientFeatureNoOverprovisioning = "envoy.lb.does_not_support_overprovisioning"
	clientFeatureResourceInSotW     = "xds.config.resource-in-sotw"
)

// buildNode returns the node of n with the user agent and the client
// features: every engine's, then features in order, without repeats.
func buildNode(n bootstrap.Node, agentName, agentVersion string, features []string) *corepb.Node {
	node := &corepb.Node{Id: n.ID, Cluster: n.Cluster, Metadata: n.Metadata, UserAgentName: agentName,
		UserAgentVersionType: &corepb.Node_UserAgentVersion{UserAgentVersion: agentVersion},
		ClientFeatures:       []string{clientFeatureNoOverprovisioning, clientFeatureResourceInSotW},
	}
	if n.Locality != (bootstrap.Locality{}) {
		node.Locality = &corepb.Locality{Region: n.Locality.Region, Zone: n.Locality.Zone, SubZone: n.Locality.SubZone}
	}
	for _, f := range features {
		if !slices.Contains(node.ClientFeatures, f) {
			node.ClientFeatures = append(node.ClientFeatures, f)
		}
	}
	return node
}
