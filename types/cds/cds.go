package cds

import (
	"bytes"
	"strings"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
)

// TypeURL is the type URL of Cluster resources.
const TypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// Options adjusts how Cluster resources are validated.
type Options struct {
	// CustomLBPolicy reports whether the client has a load-balancing
	// policy registered under name, the type name of an xds.type.v3 or
	// udpa.type.v1 TypedStruct in load_balancing_policy (gRFC A52). It
	// must be safe for concurrent use. Nil means no custom policies: such
	// entries are skipped, as gRPC skips policies missing from its LB
	// registry.
	CustomLBPolicy func(name string) bool
}

// NewType returns a descriptor for Cluster resources validated with opts.
// Use it instead of [Type] when the client registers custom LB policies.
func NewType(opts Options) registry.ResourceType {
	d := decoder{customLBPolicy: opts.CustomLBPolicy}
	return registry.ResourceType{
		TypeURL:                    TypeURL,
		Name:                       "Cluster",
		AllResourcesRequiredInSotW: true,
		Decoder:                    registry.DecoderFunc(d.decode),
		NameField:                  1, // Cluster.name
		Dependencies:               registry.DependencyFunc(dependencies),
	}
}

// Type describes Cluster resources to a registry, with no custom LB
// policies. A SotW response carries every subscribed Cluster, so one left
// out has been deleted. A Cluster depends on its EDS resource or, for an
// aggregate cluster, on its child Clusters.
var Type = NewType(Options{})

// Kind is a cluster's discovery type, the ones gRPC supports.
type Kind int

// Cluster kinds.
const (
	// KindEDS clusters get endpoints from a ClusterLoadAssignment.
	KindEDS Kind = iota + 1
	// KindLogicalDNS clusters resolve one hostname with DNS (gRFC A37).
	KindLogicalDNS
	// KindAggregate clusters fail over across child clusters in order
	// (gRFC A37, A75).
	KindAggregate
)

// String returns the proto's name for k.
func (k Kind) String() string {
	switch k {
	case KindEDS:
		return "EDS"
	case KindLogicalDNS:
		return "LOGICAL_DNS"
	case KindAggregate:
		return "AGGREGATE"
	}
	return "Kind(?)"
}

// DefaultMaxRequests is the circuit-breaking limit when the Cluster sets
// none (gRFC A32).
const DefaultMaxRequests = 1024

// Cluster is a decoded, validated CDS resource. It must not be modified;
// the engine hands the same value to every watcher.
type Cluster struct {
	// Name is the cluster's name.
	Name string
	// Kind says which of the fields below describe the endpoints.
	Kind Kind
	// EDSServiceName is eds_cluster_config.service_name for KindEDS, or ""
	// to use Name; [Cluster.EDSName] resolves it.
	EDSServiceName string
	// DNSHostname is "host:port" for KindLogicalDNS, from the one endpoint
	// of load_assignment.
	DNSHostname string
	// AggregateClusters are the child clusters of KindAggregate, highest
	// priority first.
	AggregateClusters []string
	// LBPolicy is the load-balancing policy, from load_balancing_policy if
	// set and lb_policy otherwise, in gRPC's terms (gRFC A52).
	LBPolicy LBPolicy
	// LoadReporting is true when lrs_server is set (to self): load is
	// reported with LRS to the server this Cluster came from.
	LoadReporting bool
	// MaxRequests is max_requests of the first circuit_breakers threshold
	// for priority DEFAULT, or DefaultMaxRequests.
	MaxRequests uint32
	// OutlierDetection is outlier_detection with gRFC A50 defaults applied,
	// or nil when the Cluster has none.
	OutlierDetection *OutlierDetection
	// TLS is the transport_socket's UpstreamTlsContext (gRFC A29), or nil
	// when the Cluster sets no transport socket.
	TLS *UpstreamTLS

	raw []byte
}

// EDSName returns the name of the ClusterLoadAssignment a KindEDS cluster
// uses: EDSServiceName, or Name when that is empty.
func (c *Cluster) EDSName() string {
	if c.EDSServiceName != "" {
		return c.EDSServiceName
	}
	return c.Name
}

// OutlierDetection is the outlier detection configuration (gRFC A50), with
// the defaults of unset fields filled in.
type OutlierDetection struct {
	Interval           time.Duration
	BaseEjectionTime   time.Duration
	MaxEjectionTime    time.Duration
	MaxEjectionPercent uint32
	// SuccessRate is nil when enforcing_success_rate is 0.
	SuccessRate *SuccessRateEjection
	// FailurePercentage is nil when enforcing_failure_percentage is unset
	// or 0.
	FailurePercentage *FailurePercentageEjection
}

// SuccessRateEjection configures ejection by success rate.
type SuccessRateEjection struct {
	StdevFactor           uint32
	EnforcementPercentage uint32
	MinimumHosts          uint32
	RequestVolume         uint32
}

// FailurePercentageEjection configures ejection by failure percentage.
type FailurePercentageEjection struct {
	Threshold             uint32
	EnforcementPercentage uint32
	MinimumHosts          uint32
	RequestVolume         uint32
}

// Proto returns the resource as an *envoy.config.cluster.v3.Cluster,
// decoded afresh from the bytes the server sent, so callers may modify it.
func (c *Cluster) Proto() proto.Message { return rawresource.Proto[clusterpb.Cluster](c.raw) }

// Equal reports whether other is a *Cluster the server sent as the same
// bytes.
func (c *Cluster) Equal(other registry.Resource) bool {
	return rawresource.Equal(c, other, func(a, b *Cluster) bool { return bytes.Equal(a.raw, b.raw) })
}

func dependencies(r registry.Resource) []registry.Ref {
	c, ok := r.(*Cluster)
	if !ok {
		return nil
	}
	switch c.Kind {
	case KindEDS:
		return []registry.Ref{{TypeURL: eds.TypeURL, Name: c.EDSName()}}
	case KindAggregate:
		refs := make([]registry.Ref, 0, len(c.AggregateClusters))
		for _, child := range c.AggregateClusters {
			ref := registry.Ref{TypeURL: TypeURL, Name: child}
			if !containsRef(refs, ref) {
				refs = append(refs, ref)
			}
		}
		return refs
	}
	return nil
}

func containsRef(refs []registry.Ref, r registry.Ref) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// Interface guards.
var _ registry.Equaler = (*Cluster)(nil)

// String summarizes the cluster on one line.
func (c *Cluster) String() string {
	var what string
	switch c.Kind {
	case KindEDS:
		what = "EDS " + c.EDSName()
	case KindLogicalDNS:
		what = "LOGICAL_DNS " + c.DNSHostname
	case KindAggregate:
		what = "aggregate of " + strings.Join(c.AggregateClusters, ", ")
	}
	return what + ", " + c.LBPolicy.summary()
}

// summary names the policy and its child, e.g.
// "xds_wrr_locality_experimental(round_robin)".
func (p *LBPolicy) summary() string {
	if p.Child != nil {
		return p.Kind.String() + "(" + p.Child.summary() + ")"
	}
	return p.Kind.String()
}
