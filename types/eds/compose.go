package eds

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/lbendpoint"
	"github.com/xdsengine/xdsengine/types/leds"
)

// Compose returns a new *ClusterLoadAssignment in which every locality
// with an LEDSCollection has the Endpoints of its resolved
// *leds.LbEndpointCollection; c itself is unchanged. An empty collection
// leaves its locality without endpoints, which makes it unreachable but
// is valid (gRFC A95).
//
// Compose fails, naming the collection, when lookup cannot resolve a
// collection or resolves it to another type, and when an address appears
// twice in the composed result: gRPC rejects duplicate addresses within an
// EDS resource, and with LEDS the composed result is what the client
// load-balances over. A dependency graph watch calls Compose; lookup must
// not block.
//
// The composed value shares endpoint slices with the collections; neither
// may be modified.
func (c *ClusterLoadAssignment) Compose(lookup func(registry.Ref) (registry.Resource, bool)) (registry.Resource, error) {
	out := &ClusterLoadAssignment{
		ClusterName: c.ClusterName,
		Localities:  slices.Clone(c.Localities),
		Drops:       c.Drops,
		raw:         c.raw,
		composed:    true,
	}
	var errs registry.FieldErrors
	for i := range out.Localities {
		loc := &out.Localities[i]
		if loc.LEDSCollection == "" {
			continue
		}
		field := fmt.Sprintf("locality %s priority %d", loc.ID, loc.Priority)
		r, ok := lookup(ledsRef(loc.LEDSCollection))
		if !ok {
			errs.Addf(field, "LEDS collection %q is not available", loc.LEDSCollection)
			continue
		}
		switch coll := r.(type) {
		case *leds.LbEndpointCollection:
			loc.Endpoints = coll.Endpoints
			out.sources = append(out.sources, coll)
		case *registry.GlobCollection:
			eps, err := leds.GlobEndpoints(coll)
			if err != nil {
				errs.Addf(field, "%v", err)
				continue
			}
			loc.Endpoints = eps
			out.sources = append(out.sources, coll)
		default:
			errs.Addf(field, "LEDS collection %q resolved to %T, want *leds.LbEndpointCollection or *registry.GlobCollection", loc.LEDSCollection, r)
		}
	}
	if errs.Len() == 0 {
		checkDuplicates(out.Localities, &errs)
	}
	if err := errs.Err(); err != nil {
		return nil, fmt.Errorf("composing ClusterLoadAssignment %q: %w", c.ClusterName, err)
	}
	return out, nil
}

func checkDuplicates(locs []Locality, errs *registry.FieldErrors) {
	n := 0
	for i := range locs {
		n += len(locs[i].Endpoints)
	}
	seen := make(map[netip.AddrPort]struct{}, n)
	for i := range locs {
		if addr, dup := lbendpoint.DuplicateAddress(seen, locs[i].Endpoints); dup {
			where := "inline lb_endpoints"
			if locs[i].LEDSCollection != "" {
				where = fmt.Sprintf("LEDS collection %q", locs[i].LEDSCollection)
			}
			errs.Addf(fmt.Sprintf("locality %s priority %d", locs[i].ID, locs[i].Priority),
				"duplicate endpoint address %s from %s", addr, where)
		}
	}
}
