package leds

import (
	"errors"
	"fmt"
	"strconv"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/lbendpoint"
)

const lbEndpointTypeName = "envoy.config.endpoint.v3.LbEndpoint"

// errUnnamed is returned for a collection that did not arrive in a named
// wrapper: SotW clients learn a resource's name from the resource, and
// this message has no name field.
var errUnnamed = errors.New("LbEndpointCollection has no name field: it must arrive in a named envoy.service.discovery.v3.Resource wrapper")

func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	name := opts.WrapperName
	if name == "" {
		return registry.DecodeResult{}, errUnnamed
	}
	var coll endpointpb.LbEndpointCollection
	if err := proto.Unmarshal(raw, &coll); err != nil {
		return registry.DecodeResult{Name: name}, fmt.Errorf("cannot unmarshal LbEndpointCollection: %w", err)
	}
	var errs registry.FieldErrors
	eps := convert(&coll, &errs)
	if err := errs.Err(); err != nil {
		return registry.DecodeResult{Name: name}, err
	}
	return registry.DecodeResult{Name: name, Resource: &LbEndpointCollection{
		Name:      name,
		Endpoints: eps,
		raw:       opts.KeepRaw(raw),
	}}, nil
}

// convert applies gRFC A95's rules for LbEndpointCollection: every entry
// is an inline_entry holding an LbEndpoint, validated like an EDS
// lb_endpoints entry; the sum of weights, like a locality's, fits a uint32.
func convert(coll *endpointpb.LbEndpointCollection, errs *registry.FieldErrors) []Endpoint {
	entries := coll.GetEntries()
	eps := make([]Endpoint, 0, len(entries))
	dec := lbendpoint.NewDecoder(errs, len(entries))
	var total lbendpoint.WeightSum
	for i, e := range entries {
		at := func() string { return "entries[" + strconv.Itoa(i) + "]" }
		if e.GetLocator() != nil {
			errs.Add(at()+".locator", "not supported; entries must be inline_entry")
			continue
		}
		inline := e.GetInlineEntry()
		if inline == nil {
			errs.Add(at()+".inline_entry", "field not present")
			continue
		}
		res := inline.GetResource()
		if res == nil {
			errs.Add(at()+".inline_entry.resource", "field not present")
			continue
		}
		if got := registry.TypeName(res.GetTypeUrl()); got != lbEndpointTypeName {
			errs.Addf(at()+".inline_entry.resource.type_url", "%q is not %s", res.GetTypeUrl(), lbEndpointTypeName)
			continue
		}
		var ep Endpoint
		valid, err := dec.DecodeRaw(res.GetValue(), &ep, func() string { return at() + ".inline_entry.resource" })
		if err != nil {
			errs.Addf(at()+".inline_entry.resource", "cannot unmarshal LbEndpoint: %v", err)
		}
		if valid {
			total.Add(&ep)
			eps = append(eps, ep)
		}
	}
	total.Check(errs, func() string { return "entries" })
	return eps
}
