package eds

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/lbendpoint"
)

func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	var cla endpointpb.ClusterLoadAssignment
	if err := proto.Unmarshal(raw, &cla); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("cannot unmarshal ClusterLoadAssignment: %w", err)
	}
	name := cla.GetClusterName()
	var errs registry.FieldErrors
	if name == "" {
		errs.Add("cluster_name", "must be non-empty")
	}
	localities := convertLocalities(cla.GetEndpoints(), !opts.Switches.DisableEndpointFallback, &errs)
	drops := convertDrops(cla.GetPolicy().GetDropOverloads(), &errs)
	if err := errs.Err(); err != nil {
		return registry.DecodeResult{Name: name}, err
	}
	return registry.DecodeResult{Name: name, Resource: &ClusterLoadAssignment{
		ClusterName: name,
		Localities:  localities,
		Drops:       drops,
		raw:         bytes.Clone(raw),
	}}, nil
}

type priorityLocality struct {
	priority uint32
	id       LocalityID
}

// convertLocalities applies gRFC A27's locality rules as gRPC implements
// them today (grpc-go parseEDSRespProto, C-core EdsResourceParse) and
// gRFC A95's LEDS rules (grpc-java parseLocalityLbEndpoints).
func convertLocalities(in []*endpointpb.LocalityLbEndpoints, leds bool, errs *registry.FieldErrors) []Locality {
	// Size everything up front: all endpoints share one backing array,
	// so a resource of any size costs a handful of allocations beyond
	// what proto.Unmarshal made.
	kept, endpointCount := 0, 0
	for _, l := range in {
		if l.GetLoadBalancingWeight().GetValue() == 0 {
			continue
		}
		kept++
		if !leds || l.GetLedsClusterLocalityConfig() == nil {
			endpointCount += len(l.GetLbEndpoints())
		}
	}
	out := make([]Locality, 0, kept)
	backing := make([]Endpoint, endpointCount)
	dec := lbendpoint.NewDecoder(errs, endpointCount)
	seen := make(map[priorityLocality]struct{}, kept)
	weightPerPriority := make(map[uint32]uint64)
	maxPriority := uint32(0)

	for i, l := range in {
		weight := l.GetLoadBalancingWeight().GetValue()
		if weight == 0 {
			continue
		}
		at := func() string { return "endpoints[" + strconv.Itoa(i) + "]" }
		lp := l.GetLocality()
		if lp == nil {
			errs.Add(at()+".locality", "field not present")
			continue
		}
		loc := Locality{
			ID:       LocalityID{Region: lp.GetRegion(), Zone: lp.GetZone(), SubZone: lp.GetSubZone()},
			Priority: l.GetPriority(),
			Weight:   weight,
		}
		key := priorityLocality{loc.Priority, loc.ID}
		if _, dup := seen[key]; dup {
			errs.Addf(at()+".locality", "duplicate locality %s in priority %d", loc.ID, loc.Priority)
		}
		seen[key] = struct{}{}
		before := weightPerPriority[loc.Priority]
		weightPerPriority[loc.Priority] = before + uint64(weight)
		// Reported where the sum first overflows, so that errors come in
		// locality order rather than in map order.
		if before <= math.MaxUint32 && before+uint64(weight) > math.MaxUint32 {
			errs.Addf(at()+".load_balancing_weight", "sum of locality weights in priority %d is %d, exceeds %d",
				loc.Priority, before+uint64(weight), uint64(math.MaxUint32))
		}
		maxPriority = max(maxPriority, loc.Priority)

		if ledsCfg := l.GetLedsClusterLocalityConfig(); leds && ledsCfg != nil {
			// gRFC A95: lb_endpoints is ignored; the endpoints come from a
			// list collection on the same server.
			if ledsCfg.GetLedsConfig().GetSelf() == nil {
				errs.Add(at()+".leds_cluster_locality_config.leds_config", "must have self set")
			}
			name := ledsCfg.GetLedsCollectionName()
			switch {
			case name == "":
				errs.Add(at()+".leds_cluster_locality_config.leds_collection_name", "must be non-empty")
			case strings.HasSuffix(name, "/*"):
				errs.Addf(at()+".leds_cluster_locality_config.leds_collection_name",
					"%q names a glob collection; only list collections are supported", name)
			}
			loc.LEDSCollection = name
			out = append(out, loc)
			continue
		}

		lbs := l.GetLbEndpoints()
		eps := backing[:len(lbs):len(lbs)]
		backing = backing[len(lbs):]
		n := 0
		var total uint64
		for j, lb := range lbs {
			if dec.Decode(lb, &eps[n], func() string { return at() + ".lb_endpoints[" + strconv.Itoa(j) + "]" }) {
				total += uint64(eps[n].Weight)
				n++
			}
		}
		if total > math.MaxUint32 {
			errs.Addf(at()+".lb_endpoints", "sum of endpoint weights %d exceeds %d", total, uint64(math.MaxUint32))
		}
		if n > 0 {
			// A full slice expression, so that appending to one locality's
			// endpoints can never overwrite the next locality's.
			loc.Endpoints = eps[:n:n]
		}
		out = append(out, loc)
	}

	if len(out) > 0 && uint64(len(weightPerPriority)) != uint64(maxPriority)+1 {
		// There are at most len(weightPerPriority) priorities, so a gap
		// shows up within that many steps.
		for p := uint32(0); ; p++ {
			if _, ok := weightPerPriority[p]; !ok {
				errs.Addf("endpoints", "priority %d has no localities; priorities must be contiguous from 0 (highest is %d)", p, maxPriority)
				break
			}
		}
	}
	return out
}

// convertDrops applies the drop_overloads rules of C-core's
// DropParseAndAppend, which are stricter than grpc-go's: a category must be
// named and drop_percentage must be present.
func convertDrops(in []*endpointpb.ClusterLoadAssignment_Policy_DropOverload, errs *registry.FieldErrors) []DropOverload {
	if len(in) == 0 {
		return nil
	}
	out := make([]DropOverload, 0, len(in))
	for i, d := range in {
		at := "policy.drop_overloads[" + strconv.Itoa(i) + "]"
		ok := true
		if d.GetCategory() == "" {
			errs.Add(at+".category", "must be non-empty")
			ok = false
		}
		pct := d.GetDropPercentage()
		if pct == nil {
			errs.Add(at+".drop_percentage", "field not present")
			continue
		}
		// uint64, because a numerator near 2^32 overflows uint32 once
		// scaled; the cap then applies as intended.
		ppm := uint64(pct.GetNumerator())
		switch pct.GetDenominator() {
		case typepb.FractionalPercent_HUNDRED:
			ppm *= 10_000
		case typepb.FractionalPercent_TEN_THOUSAND:
			ppm *= 100
		case typepb.FractionalPercent_MILLION:
		default:
			errs.Addf(at+".drop_percentage.denominator", "unknown denominator %d", int32(pct.GetDenominator()))
			continue
		}
		if !ok {
			continue
		}
		out = append(out, DropOverload{Category: d.GetCategory(), PartsPerMillion: uint32(min(ppm, 1_000_000))})
	}
	return out
}
