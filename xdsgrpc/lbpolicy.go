package xdsgrpc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/leastrequest"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/balancer/ringhash"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/balancer/weightedroundrobin"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

// Policy is a load-balancing policy of the program's own, which a
// Cluster selects in its load_balancing_policy with a TypedStruct whose
// type_url is TypeURL (gRFC A52): a grpc-go balancer, given the endpoints
// of one priority of the cluster (or of one locality, under
// wrr_locality).
type Policy struct {
	// TypeURL is the TypedStruct's type_url, such as
	// "type.googleapis.com/myorg.MyPolicy"; only the part after the last
	// '/' is compared, as gRPC compares it.
	TypeURL string
	// Builder builds the policy. If it implements balancer.ConfigParser,
	// the TypedStruct's value, as JSON, is parsed with it, and a Cluster
	// whose value it rejects fails (its RPCs fail) until one it accepts
	// arrives; otherwise the policy gets no config.
	Builder balancer.Builder
}

// ringHashHeader is the request_hash_header (gRFC A76) this package
// configures grpc-go's ring_hash with, and the metadata through which its
// picker hands ring_hash the hash of each RPC that the route's hash
// policies (gRFC A42) produce: grpc-go keeps the way its own xDS config
// selector hands over the hash internal. It is set only on the context of
// the pick, never on the RPC's headers.
const ringHashHeader = "x-xdsengine-ring-hash"

// leafPolicy is a grpc-go balancer and its parsed config: what one
// priority (or locality) of a cluster runs.
type leafPolicy struct {
	name    string
	builder balancer.Builder
	config  serviceconfig.LoadBalancingConfig
}

// policy is a cluster's load balancing resolved to grpc-go balancers.
type policy struct {
	// byLocality: the endpoints of each locality go to a leaf of their
	// own, picked by locality weight (wrr_locality, gRFC A52); otherwise
	// one leaf takes the priority's endpoints.
	byLocality bool
	leaf       leafPolicy
	// ringHash: the leaf is ring_hash, which takes each RPC's hash.
	ringHash bool
}

// resolvePolicy maps a Cluster's policy onto grpc-go's public balancers
// and the program's own (custom, by type name).
func resolvePolicy(p cds.LBPolicy, custom map[string]balancer.Builder) (policy, error) {
	if p.Kind == cds.LBWrrLocality {
		if p.Child == nil {
			return policy{}, fmt.Errorf("wrr_locality without an endpoint picking policy")
		}
		if p.Child.Kind == cds.LBWrrLocality {
			return policy{}, fmt.Errorf("wrr_locality under wrr_locality is not supported")
		}
		child, err := resolvePolicy(*p.Child, custom)
		if err != nil {
			return policy{}, err
		}
		child.byLocality = true
		return child, nil
	}
	var name string
	var cfg any
	switch p.Kind {
	case cds.LBRoundRobin:
		name = roundrobin.Name
	case cds.LBPickFirst:
		name = pickfirst.Name
		cfg = map[string]any{"shuffleAddressList": p.PickFirst.ShuffleAddressList}
	case cds.LBLeastRequest:
		name = leastrequest.Name
		cfg = map[string]any{"choiceCount": p.LeastRequest.ChoiceCount}
	case cds.LBRingHash:
		name = ringhash.Name
		cfg = map[string]any{"minRingSize": p.RingHash.MinRingSize, "maxRingSize": p.RingHash.MaxRingSize, "requestHashHeader": ringHashHeader}
	case cds.LBWeightedRoundRobin:
		w := p.WeightedRoundRobin
		name = weightedroundrobin.Name
		cfg = map[string]any{
			"enableOobLoadReport":     w.EnableOOBLoadReport,
			"oobReportingPeriod":      duration(w.OOBReportingPeriod),
			"blackoutPeriod":          duration(w.BlackoutPeriod),
			"weightExpirationPeriod":  duration(w.WeightExpirationPeriod),
			"weightUpdatePeriod":      duration(w.WeightUpdatePeriod),
			"errorUtilizationPenalty": w.ErrorUtilizationPenalty,
		}
	case cds.LBCustom:
		b := custom[p.Custom.Name]
		if b == nil {
			// The Cluster type was built to accept this name but the
			// builder does not have it: a registry from other options.
			return policy{}, fmt.Errorf("custom load balancing policy %q is not registered with this builder", p.Custom.Name)
		}
		lp := leafPolicy{name: p.Custom.Name, builder: b}
		if parser, ok := b.(balancer.ConfigParser); ok {
			c, err := parser.ParseConfig(p.Custom.Config)
			if err != nil {
				return policy{}, fmt.Errorf("custom load balancing policy %q: %w", p.Custom.Name, err)
			}
			lp.config = c
		}
		return policy{leaf: lp}, nil
	default:
		return policy{}, fmt.Errorf("load balancing policy %v is not supported", p.Kind)
	}
	b := balancer.Get(name)
	if b == nil {
		return policy{}, fmt.Errorf("grpc-go has no balancer %q", name)
	}
	lp := leafPolicy{name: name, builder: b}
	if cfg != nil {
		raw, err := json.Marshal(cfg)
		if err != nil {
			return policy{}, err
		}
		parser, ok := b.(balancer.ConfigParser)
		if !ok {
			return policy{}, fmt.Errorf("grpc-go's %s takes no config", name)
		}
		c, err := parser.ParseConfig(raw)
		if err != nil {
			return policy{}, fmt.Errorf("%s: %w", name, err)
		}
		lp.config = c
	}
	return policy{leaf: lp, ringHash: p.Kind == cds.LBRingHash}, nil
}

// duration writes d as a service config writes durations.
func duration(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// customBuilders indexes policies by the type name clusters name them by.
func customBuilders(policies []Policy) (map[string]balancer.Builder, error) {
	out := make(map[string]balancer.Builder, len(policies))
	for i, p := range policies {
		name := registry.TypeName(p.TypeURL)
		switch {
		case name == "":
			return nil, fmt.Errorf("xdsgrpc: Policies[%d]: empty TypeURL", i)
		case p.Builder == nil:
			return nil, fmt.Errorf("xdsgrpc: Policies[%d] (%s): nil Builder", i, name)
		case out[name] != nil:
			return nil, fmt.Errorf("xdsgrpc: Policies[%d]: %s is registered twice", i, name)
		}
		out[name] = p.Builder
	}
	return out, nil
}

// ClusterType returns the Cluster resource type that accepts the given
// policies in load_balancing_policy, as gRPC accepts a TypedStruct
// naming a policy in its registry (gRFC A52). A program that hands
// NewBuilder its own Source and has policies of its own registers this
// type in place of cds.Type; Registry does so.
func ClusterType(policies ...Policy) registry.ResourceType {
	names := map[string]bool{}
	for _, p := range policies {
		names[registry.TypeName(p.TypeURL)] = true
	}
	return cds.NewType(cds.Options{CustomLBPolicy: func(name string) bool { return names[name] }})
}
