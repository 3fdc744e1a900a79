package passthrough

import (
	"strings"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// A dependency is a resource that a resource names and that the client
// fetches from the server the resource came from: its ConfigSource is ads
// or self. One fetched elsewhere (an api_config_source naming another
// cluster, as istio-agent's SDS, or a file) is not the upstream's to
// serve, and is left out.
func sameServer(src *corepb.ConfigSource) bool {
	return src.GetAds() != nil || src.GetSelf() != nil
}

// refSet collects refs once each, in the order found.
type refSet struct {
	refs []registry.Ref
	seen map[registry.Ref]bool
}

func (s *refSet) add(typeURL, name string) {
	if name == "" {
		return
	}
	ref := registry.Ref{TypeURL: typeURL, Name: name}
	if s.seen[ref] {
		return
	}
	if s.seen == nil {
		s.seen = make(map[registry.Ref]bool)
	}
	s.seen[ref] = true
	s.refs = append(s.refs, ref)
}

// nestedRefs are a Listener's (or an ECDS extension config's): the
// RouteConfigurations its HTTP connection managers fetch with RDS, or
// that their inline scopes name; the secrets its transport sockets (and
// any extension in it) fetch with SDS; the extension configs its filters
// fetch with ECDS.
func nestedRefs(m proto.Message, r *reach) []registry.Ref {
	var s refSet
	walk(m.ProtoReflect(), r, &refFinder{set: &s})
	return s.refs
}

// clusterRefs: the ClusterLoadAssignment of an EDS cluster, the clusters
// of an aggregate cluster, and the secrets and extension configs it
// fetches, as for a Listener.
func clusterRefs(m proto.Message, r *reach) []registry.Ref {
	c, ok := m.(*clusterpb.Cluster)
	if !ok {
		return nil
	}
	var s refSet
	if c.GetType() == clusterpb.Cluster_EDS {
		eds := c.GetEdsClusterConfig()
		name := eds.GetServiceName()
		if name == "" {
			name = c.GetName()
		}
		// An xdstp:// name needs no eds_config: its authority says where
		// it is fetched (xRFC TP1, gRFC A47).
		if src := eds.GetEdsConfig(); sameServer(src) || src == nil && strings.HasPrefix(name, "xdstp:") {
			s.add(ClusterLoadAssignmentTypeURL, name)
		}
	}
	walk(m.ProtoReflect(), r, &refFinder{set: &s})
	return s.refs
}

// assignmentRefs: the LEDS collections its localities take their
// endpoints from. A glob collection ("xdstp://.../*") is a set of
// LbEndpoint resources; any other name is an LbEndpointCollection.
func assignmentRefs(m proto.Message, _ *reach) []registry.Ref {
	var s refSet
	for _, loc := range m.(*endpointpb.ClusterLoadAssignment).GetEndpoints() {
		cfg := loc.GetLedsClusterLocalityConfig()
		if cfg == nil || !sameServer(cfg.GetLedsConfig()) {
			continue
		}
		name := cfg.GetLedsCollectionName()
		if xdsname.IsGlob(name) {
			s.add(LbEndpointTypeURL, name)
		} else {
			s.add(LbEndpointCollectionTypeURL, name)
		}
	}
	return s.refs
}

// refHolders are the messages refFinder reads references from.
var refHolders = []protoreflect.FullName{
	fullName((*hcmpb.HttpConnectionManager)(nil)),
	fullName((*tlspb.SdsSecretConfig)(nil)),
	fullName((*aggregatepb.ClusterConfig)(nil)),
	fullName((*listenerpb.Filter)(nil)),
	fullName((*listenerpb.ListenerFilter)(nil)),
	fullName((*hcmpb.HttpFilter)(nil)),
	fullName((*clusterpb.Filter)(nil)),
}

func fullName(m proto.Message) protoreflect.FullName { return m.ProtoReflect().Descriptor().FullName() }

// refFinder is the visitor that finds the references a Listener or a
// Cluster makes in its messages, wherever they are nested.
type refFinder struct{ set *refSet }

func (f *refFinder) unpacked(string, proto.Message, error, *path) {}

func (f *refFinder) message(m protoreflect.Message, _ *path) {
	switch v := m.Interface().(type) {
	case *hcmpb.HttpConnectionManager:
		if rds := v.GetRds(); sameServer(rds.GetConfigSource()) {
			f.set.add(RouteConfigurationTypeURL, rds.GetRouteConfigName())
		}
		// Scopes listed inline name their routes, fetched from
		// rds_config_source; scoped_rds fetches the scopes themselves
		// as a wildcard subscription, which no name can say.
		if scoped := v.GetScopedRoutes(); sameServer(scoped.GetRdsConfigSource()) {
			for _, sc := range scoped.GetScopedRouteConfigurationsList().GetScopedRouteConfigurations() {
				if !sc.GetOnDemand() && sc.GetRouteConfiguration() == nil {
					f.set.add(RouteConfigurationTypeURL, sc.GetRouteConfigurationName())
				}
			}
		}
	case *tlspb.SdsSecretConfig:
		// Without sds_config the secret is a static one.
		if sameServer(v.GetSdsConfig()) {
			f.set.add(SecretTypeURL, v.GetName())
		}
	case *aggregatepb.ClusterConfig:
		for _, c := range v.GetClusters() {
			f.set.add(ClusterTypeURL, c)
		}
	// A filter fetched with ECDS is the resource named as the filter.
	case *listenerpb.Filter:
		f.extension(v.GetName(), v.GetConfigDiscovery())
	case *listenerpb.ListenerFilter:
		f.extension(v.GetName(), v.GetConfigDiscovery())
	case *hcmpb.HttpFilter:
		f.extension(v.GetName(), v.GetConfigDiscovery())
	case *clusterpb.Filter:
		f.extension(v.GetName(), v.GetConfigDiscovery())
	}
}

func (f *refFinder) extension(name string, src *corepb.ExtensionConfigSource) {
	if sameServer(src.GetConfigSource()) {
		f.set.add(ExtensionConfigTypeURL, name)
	}
}
