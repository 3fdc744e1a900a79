package eds

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/lbendpoint"
	"github.com/xdsengine/xdsengine/types/leds"
)

// decode reads the resource with its endpoints left as bytes, which
// lbendpoint converts without building a message per endpoint. Should any
// endpoint not parse, the resource is decoded again as one message, so
// that proto.Unmarshal gives the reason in its words; FuzzDecode checks
// that both ways give the same result.
func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	if cla, locs, ok := splitAssignment(raw); ok {
		if res, err, ok := convert(raw, cla, locs, opts); ok {
			return res, err
		}
	}
	return decodeMessage(raw, opts)
}

// decodeMessage decodes the resource through one proto.Unmarshal.
func decodeMessage(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	var cla endpointpb.ClusterLoadAssignment
	if err := proto.Unmarshal(raw, &cla); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("cannot unmarshal ClusterLoadAssignment: %w", err)
	}
	res, err, _ := convert(raw, &cla, nil, opts)
	return res, err
}

// convert checks and converts a ClusterLoadAssignment. locs, when not nil,
// are the bytes of cla's localities, whose lb_endpoints cla lacks. It
// reports false if one of those does not parse.
func convert(raw []byte, cla *endpointpb.ClusterLoadAssignment, locs []localityBytes, opts registry.DecodeOptions) (registry.DecodeResult, error, bool) {
	name := cla.GetClusterName()
	var errs registry.FieldErrors
	if name == "" {
		errs.Add("cluster_name", "must be non-empty")
	}
	localities, ok := convertLocalities(cla.GetEndpoints(), locs, ledsSupportOf(opts), &errs)
	if !ok {
		return registry.DecodeResult{}, nil, false
	}
	drops := convertDrops(cla.GetPolicy().GetDropOverloads(), &errs)
	if err := errs.Err(); err != nil {
		return registry.DecodeResult{Name: name}, err, true
	}
	return registry.DecodeResult{Name: name, Resource: &ClusterLoadAssignment{
		ClusterName: name,
		Localities:  localities,
		Drops:       drops,
		raw:         opts.KeepRaw(raw),
	}}, nil, true
}

type priorityLocality struct {
	priority uint32
	id       LocalityID
}

// convertLocalities applies gRFC A27's locality rules as gRPC implements
// them today (grpc-go parseEDSRespProto, C-core EdsResourceParse) and
// gRFC A95's LEDS rules (grpc-java parseLocalityLbEndpoints).
// locs, when not nil, are the bytes of the localities, whose lb_endpoints
// in lack; it reports false if one of those does not parse.
func convertLocalities(in []*endpointpb.LocalityLbEndpoints, locs []localityBytes, leds ledsSupport, errs *registry.FieldErrors) ([]Locality, bool) {
	c := newLocalityConverter(in, locs, leds, errs)
	for i, l := range in {
		if l.GetLoadBalancingWeight().GetValue() == 0 {
			// Ignored, but proto.Unmarshal of the whole resource would
			// still have refused endpoints that do not parse.
			if locs != nil && !locs[i].parses() {
				return nil, false
			}
			continue
		}
		if !c.convert(i, l) {
			return nil, false
		}
	}
	c.checkPriorities()
	return c.out, true
}

// localityConverter converts the localities of one resource, sharing one
// backing array for all their endpoints.
type localityConverter struct {
	leds ledsSupport
	errs *registry.FieldErrors
	out  []Locality
	// locs are the localities' bytes, or nil (see convertLocalities).
	locs []localityBytes
	// backing holds the endpoints not yet given to a locality.
	backing           []Endpoint
	dec               *lbendpoint.Decoder
	seen              map[priorityLocality]struct{}
	weightPerPriority map[uint32]uint64
	maxPriority       uint32
}

// newLocalityConverter sizes everything up front, so that a resource of
// any size costs a handful of allocations beyond what proto.Unmarshal
// made.
func newLocalityConverter(in []*endpointpb.LocalityLbEndpoints, locs []localityBytes, leds ledsSupport, errs *registry.FieldErrors) *localityConverter {
	kept, endpointCount := 0, 0
	for i, l := range in {
		if l.GetLoadBalancingWeight().GetValue() == 0 {
			continue
		}
		kept++
		if leds == ledsOff || l.GetLedsClusterLocalityConfig() == nil {
			if locs != nil {
				endpointCount += locs[i].endpoints
			} else {
				endpointCount += len(l.GetLbEndpoints())
			}
		}
	}
	return &localityConverter{
		locs:              locs,
		leds:              leds,
		errs:              errs,
		out:               make([]Locality, 0, kept),
		backing:           make([]Endpoint, endpointCount),
		dec:               lbendpoint.NewDecoder(errs, endpointCount),
		seen:              make(map[priorityLocality]struct{}, kept),
		weightPerPriority: make(map[uint32]uint64),
	}
}

// convert adds locality i, of non-zero weight. It reports false if the
// locality's endpoints, read from bytes, do not parse.
func (c *localityConverter) convert(i int, l *endpointpb.LocalityLbEndpoints) bool {
	at := func() string { return "endpoints[" + strconv.Itoa(i) + "]" }
	lp := l.GetLocality()
	if lp == nil {
		c.errs.Add(at()+".locality", "field not present")
		return c.locs == nil || c.locs[i].parses()
	}
	loc := Locality{
		ID:       LocalityID{Region: lp.GetRegion(), Zone: lp.GetZone(), SubZone: lp.GetSubZone()},
		Priority: l.GetPriority(),
		Weight:   l.GetLoadBalancingWeight().GetValue(),
	}
	c.checkLocality(at, loc)
	switch ledsCfg := l.GetLedsClusterLocalityConfig(); {
	case c.leds != ledsOff && ledsCfg != nil:
		loc.LEDSCollection = c.collection(at, ledsCfg)
		if c.locs != nil && !c.locs[i].parses() {
			return false
		}
	case c.locs != nil:
		var ok bool
		if loc.Endpoints, ok = c.endpointsFromBytes(at, c.locs[i]); !ok {
			return false
		}
	default:
		loc.Endpoints = c.endpoints(at, l.GetLbEndpoints())
	}
	c.out = append(c.out, loc)
	return true
}

// checkLocality checks a locality against the ones before it: no
// duplicate in a priority, and weights per priority that fit in 32 bits.
func (c *localityConverter) checkLocality(at func() string, loc Locality) {
	key := priorityLocality{loc.Priority, loc.ID}
	if _, dup := c.seen[key]; dup {
		c.errs.Addf(at()+".locality", "duplicate locality %s in priority %d", loc.ID, loc.Priority)
	}
	c.seen[key] = struct{}{}
	before := c.weightPerPriority[loc.Priority]
	c.weightPerPriority[loc.Priority] = before + uint64(loc.Weight)
	// Reported where the sum first overflows, so that errors come in
	// locality order rather than in map order.
	if before <= math.MaxUint32 && before+uint64(loc.Weight) > math.MaxUint32 {
		c.errs.Addf(at()+".load_balancing_weight", "sum of locality weights in priority %d is %d, exceeds %d",
			loc.Priority, before+uint64(loc.Weight), uint64(math.MaxUint32))
	}
	c.maxPriority = max(c.maxPriority, loc.Priority)
}

// ledsSupport is what a locality's leds_cluster_locality_config may
// name, given the engine's switches and the server the resource came from.
type ledsSupport int

const (
	// ledsOff: the config is ignored (GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK
	// off), and lb_endpoints is used.
	ledsOff ledsSupport = iota
	// ledsLists: list collections only (gRFC A95), over State of the World.
	ledsLists
	// ledsGlobs: list collections and glob collections (xRFC TP1), which
	// exist only over incremental xDS.
	ledsGlobs
)

func ledsSupportOf(opts registry.DecodeOptions) ledsSupport {
	switch {
	case opts.Switches.DisableEndpointFallback:
		return ledsOff
	case opts.Server.Delta:
		return ledsGlobs
	}
	return ledsLists
}

// Collection names carry their resource type (xRFC TP1): a list collection
// is an LbEndpointCollection, a glob collection's members are LbEndpoints.
var (
	listCollectionType = xdsname.TypeFromURL(leds.TypeURL)
	globMemberType     = xdsname.TypeFromURL(leds.EndpointTypeURL)
)

// collection checks a locality whose endpoints come from a LEDS
// collection on the same server (gRFC A95: lb_endpoints is ignored) and
// returns the collection's name.
func (c *localityConverter) collection(at func() string, cfg *endpointpb.LedsClusterLocalityConfig) string {
	if cfg.GetLedsConfig().GetSelf() == nil {
		c.errs.Add(at()+".leds_cluster_locality_config.leds_config", "must have self set")
	}
	name := cfg.GetLedsCollectionName()
	field := at() + ".leds_cluster_locality_config.leds_collection_name"
	if name == "" {
		c.errs.Add(field, "must be non-empty")
		return name
	}
	glob := strings.HasSuffix(strings.SplitN(name, "?", 2)[0], xdsname.GlobSuffix)
	if !strings.HasPrefix(name, "xdstp:") {
		if glob {
			c.errs.Addf(field, "%q names a glob collection but is not an xdstp:// name (xRFC TP1)", name)
		}
		return name
	}
	n, err := xdsname.Parse(name)
	switch {
	case err != nil:
		c.errs.Addf(field, "%v", err)
	case glob && c.leds != ledsGlobs:
		c.errs.Addf(field, "%q names a glob collection, which only incremental xDS serves (xRFC TP1); "+
			"this server speaks State of the World, where gRFC A95 allows list collections only", name)
	case glob && n.Type != globMemberType:
		c.errs.Addf(field, "glob collection %q names resource type %q, want %q", name, n.Type, globMemberType)
	case !glob && n.Type != listCollectionType:
		c.errs.Addf(field, "list collection %q names resource type %q, want %q", name, n.Type, listCollectionType)
	}
	return name
}

// endpoints decodes a locality's lb_endpoints into the shared backing
// array; nil when none is valid.
func (c *localityConverter) endpoints(at func() string, lbs []*endpointpb.LbEndpoint) []Endpoint {
	eps := c.backing[:len(lbs):len(lbs)]
	c.backing = c.backing[len(lbs):]
	n := 0
	var total lbendpoint.WeightSum
	for j, lb := range lbs {
		if c.dec.Decode(lb, &eps[n], func() string { return at() + ".lb_endpoints[" + strconv.Itoa(j) + "]" }) {
			total.Add(&eps[n])
			n++
		}
	}
	total.Check(c.errs, func() string { return at() + ".lb_endpoints" })
	if n == 0 {
		return nil
	}
	// A full slice expression, so that appending to one locality's
	// endpoints can never overwrite the next locality's.
	return eps[:n:n]
}

// endpointsFromBytes is endpoints for a locality read as bytes: each
// endpoint of the usual shape is converted from its bytes, any other is
// unmarshaled and decoded as a message. It reports false if one does not
// parse.
func (c *localityConverter) endpointsFromBytes(at func() string, loc localityBytes) ([]Endpoint, bool) {
	eps := c.backing[:loc.endpoints:loc.endpoints]
	c.backing = c.backing[loc.endpoints:]
	n, j := 0, 0
	var total lbendpoint.WeightSum
	ok := loc.eachEndpoint(func(b []byte) bool {
		idx := j
		j++
		valid, err := c.dec.DecodeRaw(b, &eps[n], func() string { return at() + ".lb_endpoints[" + strconv.Itoa(idx) + "]" })
		if valid {
			total.Add(&eps[n])
			n++
		}
		return err == nil
	})
	if !ok {
		return nil, false
	}
	total.Check(c.errs, func() string { return at() + ".lb_endpoints" })
	if n == 0 {
		return nil, true
	}
	return eps[:n:n], true
}

// checkPriorities requires priorities contiguous from 0.
func (c *localityConverter) checkPriorities() {
	if len(c.out) == 0 || uint64(len(c.weightPerPriority)) == uint64(c.maxPriority)+1 {
		return
	}
	// There are at most len(weightPerPriority) priorities, so a gap shows
	// up within that many steps.
	for p := uint32(0); ; p++ {
		if _, ok := c.weightPerPriority[p]; !ok {
			c.errs.Addf("endpoints", "priority %d has no localities; priorities must be contiguous from 0 (highest is %d)", p, c.maxPriority)
			return
		}
	}
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
