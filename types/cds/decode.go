package cds

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/registry"
)

const aggregateConfigTypeName = "envoy.extensions.clusters.aggregate.v3.ClusterConfig"

type decoder struct {
	customLBPolicy func(string) bool
}

var decodeTargets = sync.Pool{New: func() any { return new(decodeTarget) }}

func (d decoder) decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	target := decodeTargets.Get().(*decodeTarget)
	pb := &target.pb
	defer func() {
		target.reset()
		decodeTargets.Put(target)
	}()
	if err := target.unmarshalCluster(raw); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("cannot unmarshal Cluster: %w", err)
	}
	var errs registry.FieldErrors
	c := &Cluster{Name: pb.GetName()}
	if c.Name == "" {
		errs.Add("name", "must be non-empty")
	}
	discoveryType(pb, c, &errs)
	lb := lbConverter{custom: d.customLBPolicy, errs: &errs}
	lb.convert(pb, &c.LBPolicy)
	c.TLS = upstreamTLS(pb, opts, &errs)
	if lrs := pb.GetLrsServer(); lrs != nil {
		if lrs.GetSelf() == nil {
			errs.Add("lrs_server", "must have self set")
		}
		c.LoadReporting = true
	}
	c.MaxRequests = maxRequests(pb.GetCircuitBreakers())
	c.OutlierDetection = outlierDetection(pb.GetOutlierDetection(), &errs)
	if err := errs.Err(); err != nil {
		return registry.DecodeResult{Name: c.Name}, err
	}
	c.raw = opts.KeepRaw(raw)
	return registry.DecodeResult{Name: c.Name, Resource: c}, nil
}

// discoveryType applies the rules for the cluster kinds gRPC supports:
// EDS (gRFC A27), LOGICAL_DNS and aggregate (gRFC A37), as C-core's
// CdsResourceParse and grpc-go's validateClusterAndConstructClusterUpdate
// implement them.
func discoveryType(pb *clusterpb.Cluster, c *Cluster, errs *registry.FieldErrors) {
	// type and cluster_type are one oneof; GetType reports STATIC, the
	// zero value, when cluster_type is set, so test cluster_type first.
	if ct := pb.GetClusterType(); ct != nil {
		c.Kind = KindAggregate
		c.AggregateClusters = aggregateClusters(ct, errs)
		return
	}
	switch pb.GetType() {
	case clusterpb.Cluster_EDS:
		c.Kind = KindEDS
		cfg := pb.GetEdsClusterConfig()
		if cfg == nil {
			errs.Add("eds_cluster_config", "field not present")
			return
		}
		if src := cfg.GetEdsConfig(); src == nil {
			errs.Add("eds_cluster_config.eds_config", "field not present")
		} else if src.GetAds() == nil && src.GetSelf() == nil {
			errs.Add("eds_cluster_config.eds_config", "ConfigSource must be ads or self")
		}
		c.EDSServiceName = cfg.GetServiceName()
		// An xdstp cluster name is not a valid EDS resource name (gRFC A47).
		if c.EDSServiceName == "" && strings.HasPrefix(c.Name, "xdstp:") {
			errs.Add("eds_cluster_config.service_name", "must be set if the Cluster has an xdstp name")
		}
	case clusterpb.Cluster_LOGICAL_DNS:
		c.Kind = KindLogicalDNS
		c.DNSHostname = logicalDNSHostname(pb.GetLoadAssignment(), errs)
	default:
		errs.Addf("type", "discovery type %s is not supported; must be EDS, LOGICAL_DNS or an aggregate cluster_type", pb.GetType())
	}
}

func aggregateClusters(ct *clusterpb.Cluster_CustomClusterType, errs *registry.FieldErrors) []string {
	tc := ct.GetTypedConfig()
	if tc == nil {
		errs.Add("cluster_type.typed_config", "field not present")
		return nil
	}
	// C-core identifies the extension by its config type, not by name.
	if registry.TypeName(tc.GetTypeUrl()) != aggregateConfigTypeName {
		errs.Addf("cluster_type.typed_config.type_url", "unsupported cluster type %q; only %s is supported", tc.GetTypeUrl(), aggregateConfigTypeName)
		return nil
	}
	var cfg aggregatepb.ClusterConfig
	if err := proto.Unmarshal(tc.GetValue(), &cfg); err != nil {
		errs.Addf("cluster_type.typed_config", "cannot unmarshal %s: %v", aggregateConfigTypeName, err)
		return nil
	}
	children := cfg.GetClusters()
	if len(children) == 0 {
		errs.Add("cluster_type.typed_config.clusters", "must be non-empty")
	}
	for i, name := range children {
		if name == "" {
			errs.Add("cluster_type.typed_config.clusters["+strconv.Itoa(i)+"]", "must be non-empty")
		}
	}
	return children
}

// logicalDNSHostname applies C-core's LogicalDnsParse: exactly one
// locality with exactly one endpoint whose socket address has a host, a
// port_value and no custom resolver.
func logicalDNSHostname(la *endpointpb.ClusterLoadAssignment, errs *registry.FieldErrors) string {
	const field = "load_assignment"
	if la == nil {
		errs.Add(field, "field not present; a LOGICAL_DNS cluster needs it")
		return ""
	}
	if n := len(la.GetEndpoints()); n != 1 {
		errs.Addf(field+".endpoints", "must contain exactly one locality for a LOGICAL_DNS cluster, found %d", n)
		return ""
	}
	lbs := la.GetEndpoints()[0].GetLbEndpoints()
	if n := len(lbs); n != 1 {
		errs.Addf(field+".endpoints[0].lb_endpoints", "must contain exactly one endpoint for a LOGICAL_DNS cluster, found %d", n)
		return ""
	}
	const at = field + ".endpoints[0].lb_endpoints[0].endpoint"
	ep := lbs[0].GetEndpoint()
	if ep == nil {
		errs.Add(at, "field not present")
		return ""
	}
	if ep.GetAddress() == nil {
		errs.Add(at+".address", "field not present")
		return ""
	}
	sa := ep.GetAddress().GetSocketAddress()
	if sa == nil {
		errs.Add(at+".address.socket_address", "field not present")
		return ""
	}
	ok := true
	if sa.GetResolverName() != "" {
		errs.Add(at+".address.socket_address.resolver_name", "must be empty for a LOGICAL_DNS cluster")
		ok = false
	}
	if sa.GetAddress() == "" {
		errs.Add(at+".address.socket_address.address", "field not present")
		ok = false
	}
	pv, isPortValue := sa.GetPortSpecifier().(*corepb.SocketAddress_PortValue)
	switch {
	case !isPortValue:
		errs.Add(at+".address.socket_address.port_value", "field not present")
		ok = false
	case pv.PortValue > 65535:
		errs.Addf(at+".address.socket_address.port_value", "%d out of range [0, 65535]", pv.PortValue)
		ok = false
	}
	if !ok {
		return ""
	}
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(pv.PortValue), 10))
}

// maxRequests applies gRFC A32: the first threshold for priority DEFAULT
// decides, and its max_requests if set.
func maxRequests(cb *clusterpb.CircuitBreakers) uint32 {
	for _, t := range cb.GetThresholds() {
		if t.GetPriority() != corepb.RoutingPriority_DEFAULT {
			continue
		}
		if mr := t.GetMaxRequests(); mr != nil {
			return mr.GetValue()
		}
		break
	}
	return DefaultMaxRequests
}

// maxDurationSeconds is the largest seconds value google.protobuf.Duration
// allows, about 10,000 years.
const maxDurationSeconds = 315_576_000_000

// nonNegativeDuration applies C-core's ParseDuration rules: seconds and
// nanos each within their documented range and not negative.
func nonNegativeDuration(d *durationpb.Duration, field string, errs *registry.FieldErrors) time.Duration {
	ok := true
	if s := d.GetSeconds(); s < 0 || s > maxDurationSeconds {
		errs.Addf(field+".seconds", "%d out of range [0, %d]", s, int64(maxDurationSeconds))
		ok = false
	}
	if n := d.GetNanos(); n < 0 || n > 999_999_999 {
		errs.Addf(field+".nanos", "%d out of range [0, 999999999]", n)
		ok = false
	}
	if !ok {
		return 0
	}
	// AsDuration saturates beyond time.Duration's ~292 years.
	return d.AsDuration()
}
