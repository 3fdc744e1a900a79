package cds

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/xdsengine/xdsengine/registry"

	udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	cswrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	leastrequestpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// LBPolicyKind names a gRPC load-balancing policy an xDS Cluster can
// select.
type LBPolicyKind int

// Load-balancing policies, named after the gRPC policies they configure.
const (
	LBRoundRobin LBPolicyKind = iota + 1
	// LBRingHash is ring_hash (gRFC A42).
	LBRingHash
	// LBLeastRequest is least_request (gRFC A48).
	LBLeastRequest
	// LBWrrLocality picks a locality by weight, then an endpoint with
	// LBPolicy.Child (gRFC A52).
	LBWrrLocality
	// LBPickFirst is pick_first (gRFC A62).
	LBPickFirst
	// LBWeightedRoundRobin is client-side weighted round robin (gRFC A58).
	LBWeightedRoundRobin
	// LBCustom is a policy the client registered itself, configured with
	// a TypedStruct (gRFC A52).
	LBCustom
)

// String returns the gRPC policy name, or "custom".
func (k LBPolicyKind) String() string {
	switch k {
	case LBRoundRobin:
		return "round_robin"
	case LBRingHash:
		return "ring_hash_experimental"
	case LBLeastRequest:
		return "least_request_experimental"
	case LBWrrLocality:
		return "xds_wrr_locality_experimental"
	case LBPickFirst:
		return "pick_first"
	case LBWeightedRoundRobin:
		return "weighted_round_robin"
	case LBCustom:
		return "custom"
	}
	return "LBPolicyKind(" + strconv.Itoa(int(k)) + ")"
}

// LBPolicy is a load-balancing policy and its configuration. Only the
// field that matches Kind is set.
type LBPolicy struct {
	Kind LBPolicyKind
	// RingHash configures LBRingHash.
	RingHash RingHashConfig
	// LeastRequest configures LBLeastRequest.
	LeastRequest LeastRequestConfig
	// PickFirst configures LBPickFirst.
	PickFirst PickFirstConfig
	// WeightedRoundRobin configures LBWeightedRoundRobin.
	WeightedRoundRobin WeightedRoundRobinConfig
	// Child is the endpoint-picking policy of LBWrrLocality.
	Child *LBPolicy
	// Custom configures LBCustom.
	Custom CustomPolicy
}

// RingHashConfig bounds the ring's size; both are within [1, 8388608]
// and MinRingSize <= MaxRingSize.
type RingHashConfig struct {
	MinRingSize, MaxRingSize uint64
}

// LeastRequestConfig configures least_request; ChoiceCount is at least 2.
type LeastRequestConfig struct {
	ChoiceCount uint32
}

// PickFirstConfig configures pick_first.
type PickFirstConfig struct {
	ShuffleAddressList bool
}

// WeightedRoundRobinConfig configures client-side weighted round robin,
// with gRFC A58's defaults for fields the Cluster leaves unset.
type WeightedRoundRobinConfig struct {
	EnableOOBLoadReport     bool
	OOBReportingPeriod      time.Duration
	BlackoutPeriod          time.Duration
	WeightExpirationPeriod  time.Duration
	WeightUpdatePeriod      time.Duration
	ErrorUtilizationPenalty float32
}

// CustomPolicy is a client-registered policy: its registered name and its
// configuration as a JSON object.
type CustomPolicy struct {
	Name   string
	Config json.RawMessage
}

// Limits from gRFC A42 and A52.
const (
	maxRingSize         = 8 * 1024 * 1024
	defaultMinRingSize  = 1024
	defaultChoiceCount  = 2
	maxLBPolicyDepth    = 16
	typedStructV3       = "xds.type.v3.TypedStruct"
	typedStructV1       = "udpa.type.v1.TypedStruct"
	ringHashPolicy      = "envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash"
	roundRobinPolicy    = "envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"
	wrrLocalityPolicy   = "envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality"
	leastRequestPolicy  = "envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest"
	pickFirstPolicy     = "envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst"
	weightedRoundRobinP = "envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin"
)

type lbConverter struct {
	custom func(string) bool
	errs   *registry.FieldErrors
}

// convert applies gRFC A52: load_balancing_policy, when present, replaces
// lb_policy and its config.
func (c lbConverter) convert(pb *clusterpb.Cluster, dst *LBPolicy) {
	// dst is a new Cluster's, zero: written field by field, since a
	// policy returned and then copied in costs a stall per Cluster (the
	// copy reads back wide what was just written narrow).
	if lbp := pb.GetLoadBalancingPolicy(); lbp != nil {
		*dst, _ = c.fromPolicy(lbp, "load_balancing_policy", 0)
		return
	}
	switch pb.GetLbPolicy() {
	case clusterpb.Cluster_ROUND_ROBIN:
		// gRPC's reading of ROUND_ROBIN: weighted across localities, round
		// robin within one (gRFC A52).
		dst.Kind, dst.Child = LBWrrLocality, roundRobinChild
	case clusterpb.Cluster_RING_HASH:
		dst.Kind, dst.RingHash = LBRingHash, c.legacyRingHash(pb.GetRingHashLbConfig())
	case clusterpb.Cluster_LEAST_REQUEST:
		dst.Kind = LBLeastRequest
		dst.LeastRequest.ChoiceCount = c.choiceCount(pb.GetLeastRequestLbConfig().GetChoiceCount(), "least_request_lb_config.choice_count")
	default:
		c.errs.Addf("lb_policy", "%s is not supported; must be ROUND_ROBIN, RING_HASH or LEAST_REQUEST", pb.GetLbPolicy())
	}
}

func (c lbConverter) legacyRingHash(cfg *clusterpb.Cluster_RingHashLbConfig) RingHashConfig {
	const at = "ring_hash_lb_config"
	if cfg.GetHashFunction() != clusterpb.Cluster_RingHashLbConfig_XX_HASH {
		c.errs.Addf(at+".hash_function", "%s is not supported; must be XX_HASH", cfg.GetHashFunction())
	}
	return c.ringSizes(cfg.GetMinimumRingSize(), cfg.GetMaximumRingSize(), at)
}

// ringSizes applies gRFC A42's limits as C-core does: each size, when
// set, within [1, 8M], and the minimum not above the maximum.
func (c lbConverter) ringSizes(minSize, maxSize *wrapperspb.UInt64Value, at string) RingHashConfig {
	cfg := RingHashConfig{MinRingSize: defaultMinRingSize, MaxRingSize: maxRingSize}
	if maxSize != nil {
		cfg.MaxRingSize = maxSize.GetValue()
		if cfg.MaxRingSize == 0 || cfg.MaxRingSize > maxRingSize {
			c.errs.Addf(at+".maximum_ring_size", "%d out of range [1, %d]", cfg.MaxRingSize, maxRingSize)
		}
	}
	if minSize != nil {
		cfg.MinRingSize = minSize.GetValue()
		if cfg.MinRingSize == 0 || cfg.MinRingSize > maxRingSize {
			c.errs.Addf(at+".minimum_ring_size", "%d out of range [1, %d]", cfg.MinRingSize, maxRingSize)
		}
	}
	if cfg.MinRingSize > cfg.MaxRingSize {
		c.errs.Addf(at+".minimum_ring_size", "%d is greater than maximum_ring_size %d", cfg.MinRingSize, cfg.MaxRingSize)
	}
	return cfg
}

// choiceCount applies gRFC A48: default 2, less than 2 rejected.
func (c lbConverter) choiceCount(v *wrapperspb.UInt32Value, field string) uint32 {
	if v == nil {
		return defaultChoiceCount
	}
	if v.GetValue() < 2 {
		c.errs.Addf(field, "%d must be at least 2", v.GetValue())
	}
	return v.GetValue()
}

// fromPolicy converts the first supported entry of a LoadBalancingPolicy,
// recursing into wrr_locality, as gRFC A52 prescribes: unsupported entries
// are skipped, a supported entry with a bad config is an error, and so is
// a list with no supported entry or more than 16 levels of nesting.
func (c lbConverter) fromPolicy(lbp *clusterpb.LoadBalancingPolicy, at string, depth int) (LBPolicy, bool) {
	if depth >= maxLBPolicyDepth {
		c.errs.Addf(at, "exceeds the maximum nesting depth of %d", maxLBPolicyDepth)
		return LBPolicy{}, false
	}
	for i, p := range lbp.GetPolicies() {
		field := at + ".policies[" + strconv.Itoa(i) + "].typed_extension_config"
		tec := p.GetTypedExtensionConfig()
		if tec == nil {
			c.errs.Add(field, "field not present")
			return LBPolicy{}, false
		}
		field += ".typed_config"
		tc := tec.GetTypedConfig()
		if tc == nil {
			c.errs.Add(field, "field not present")
			return LBPolicy{}, false
		}
		switch typeName := registry.TypeName(tc.GetTypeUrl()); typeName {
		case roundRobinPolicy:
			return LBPolicy{Kind: LBRoundRobin}, true
		case ringHashPolicy:
			var m ringhashpb.RingHash
			if !c.unmarshal(tc.GetValue(), &m, field, typeName) {
				return LBPolicy{}, false
			}
			if hf := m.GetHashFunction(); hf != ringhashpb.RingHash_XX_HASH && hf != ringhashpb.RingHash_DEFAULT_HASH {
				c.errs.Addf(field+".hash_function", "%s is not supported; must be XX_HASH", hf)
			}
			return LBPolicy{Kind: LBRingHash, RingHash: c.ringSizes(m.GetMinimumRingSize(), m.GetMaximumRingSize(), field)}, true
		case leastRequestPolicy:
			var m leastrequestpb.LeastRequest
			if !c.unmarshal(tc.GetValue(), &m, field, typeName) {
				return LBPolicy{}, false
			}
			return LBPolicy{Kind: LBLeastRequest, LeastRequest: LeastRequestConfig{
				ChoiceCount: c.choiceCount(m.GetChoiceCount(), field+".choice_count"),
			}}, true
		case pickFirstPolicy:
			var m pickfirstpb.PickFirst
			if !c.unmarshal(tc.GetValue(), &m, field, typeName) {
				return LBPolicy{}, false
			}
			return LBPolicy{Kind: LBPickFirst, PickFirst: PickFirstConfig{ShuffleAddressList: m.GetShuffleAddressList()}}, true
		case weightedRoundRobinP:
			var m cswrrpb.ClientSideWeightedRoundRobin
			if !c.unmarshal(tc.GetValue(), &m, field, typeName) {
				return LBPolicy{}, false
			}
			return LBPolicy{Kind: LBWeightedRoundRobin, WeightedRoundRobin: c.weightedRoundRobin(&m, field)}, true
		case wrrLocalityPolicy:
			var m wrrlocalitypb.WrrLocality
			if !c.unmarshal(tc.GetValue(), &m, field, typeName) {
				return LBPolicy{}, false
			}
			child := m.GetEndpointPickingPolicy()
			if child == nil {
				c.errs.Add(field+".endpoint_picking_policy", "field not present")
				return LBPolicy{}, false
			}
			cp, ok := c.fromPolicy(child, field+".endpoint_picking_policy", depth+1)
			if !ok {
				return LBPolicy{}, false
			}
			return LBPolicy{Kind: LBWrrLocality, Child: &cp}, true
		case typedStructV3, typedStructV1:
			if p, found := c.customPolicy(tc.GetValue(), field, typeName); found {
				return p, true
			}
		}
	}
	c.errs.Add(at, "no supported load balancing policy found")
	return LBPolicy{}, false
}

func (c lbConverter) unmarshal(b []byte, m proto.Message, field, typeName string) bool {
	if err := proto.Unmarshal(b, m); err != nil {
		c.errs.Addf(field, "cannot unmarshal %s: %v", typeName, err)
		return false
	}
	return true
}

// customPolicy reads a TypedStruct entry. found is false, so the entry is
// skipped, when the client has no policy of that name.
func (c lbConverter) customPolicy(b []byte, field, typeName string) (p LBPolicy, found bool) {
	var typeURL string
	var value *structpb.Struct
	if typeName == typedStructV3 {
		var m xdstypepb.TypedStruct
		if !c.unmarshal(b, &m, field, typeName) {
			return LBPolicy{}, true
		}
		typeURL, value = m.GetTypeUrl(), m.GetValue()
	} else {
		var m udpatypepb.TypedStruct
		if !c.unmarshal(b, &m, field, typeName) {
			return LBPolicy{}, true
		}
		typeURL, value = m.GetTypeUrl(), m.GetValue()
	}
	name := registry.TypeName(typeURL)
	if name == "" || c.custom == nil || !c.custom(name) {
		return LBPolicy{}, false
	}
	// encoding/json sorts map keys, so equal Structs give equal bytes.
	cfg, err := json.Marshal(value.AsMap())
	if err != nil {
		c.errs.Addf(field+".value", "cannot convert to JSON: %v", err)
		return LBPolicy{}, true
	}
	return LBPolicy{Kind: LBCustom, Custom: CustomPolicy{Name: name, Config: cfg}}, true
}

// weightedRoundRobin applies C-core's rules (durations valid and not
// negative, error_utilization_penalty not negative) and gRFC A58's
// defaults.
func (c lbConverter) weightedRoundRobin(m *cswrrpb.ClientSideWeightedRoundRobin, at string) WeightedRoundRobinConfig {
	cfg := WeightedRoundRobinConfig{
		EnableOOBLoadReport:     m.GetEnableOobLoadReport().GetValue(),
		OOBReportingPeriod:      10 * time.Second,
		BlackoutPeriod:          10 * time.Second,
		WeightExpirationPeriod:  3 * time.Minute,
		WeightUpdatePeriod:      time.Second,
		ErrorUtilizationPenalty: 1,
	}
	if d := m.GetOobReportingPeriod(); d != nil {
		cfg.OOBReportingPeriod = nonNegativeDuration(d, at+".oob_reporting_period", c.errs)
	}
	if d := m.GetBlackoutPeriod(); d != nil {
		cfg.BlackoutPeriod = nonNegativeDuration(d, at+".blackout_period", c.errs)
	}
	if d := m.GetWeightExpirationPeriod(); d != nil {
		cfg.WeightExpirationPeriod = nonNegativeDuration(d, at+".weight_expiration_period", c.errs)
	}
	if d := m.GetWeightUpdatePeriod(); d != nil {
		cfg.WeightUpdatePeriod = nonNegativeDuration(d, at+".weight_update_period", c.errs)
	}
	if p := m.GetErrorUtilizationPenalty(); p != nil {
		cfg.ErrorUtilizationPenalty = p.GetValue()
		// Written so that NaN fails too.
		if !(p.GetValue() >= 0) {
			c.errs.Addf(at+".error_utilization_penalty", "%v must not be negative", p.GetValue())
		}
	}
	return cfg
}

// roundRobinChild is the child policy of every cluster that says
// ROUND_ROBIN, the most common: decoded resources are never modified, so
// they share one value rather than each holding a copy.
var roundRobinChild = &LBPolicy{Kind: LBRoundRobin}
