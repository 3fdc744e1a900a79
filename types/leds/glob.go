package leds

import (
	"bytes"
	"fmt"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/lbendpoint"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
)

// EndpointTypeURL is the type URL of single LbEndpoint resources: the
// members of a LEDS glob collection (xRFC TP1), as Envoy's LEDS serves
// them.
const EndpointTypeURL = "type.googleapis.com/" + lbEndpointTypeName

// EndpointType describes LbEndpoint resources to a registry. An EDS
// locality whose leds_collection_name is a glob collection
// ("xdstp://authority/envoy.config.endpoint.v3.LbEndpoint/path/*")
// depends on it: the engine watches the glob, and delivers its members,
// as they are added and removed, in one *registry.GlobCollection. Removals
// are explicit only over incremental xDS, so such collections belong on a
// server with the delta_xds feature. Off, like [Type], when the switches
// disable gRFC A95.
var EndpointType = registry.ResourceType{
	TypeURL: EndpointTypeURL,
	Name:    "LbEndpoint",
	Decoder: registry.DecoderFunc(decodeEndpoint),
	Enabled: func(sw features.Switches) bool { return !sw.DisableEndpointFallback },
}

// LbEndpoint is one decoded, validated member of a LEDS glob collection.
// It must not be modified.
type LbEndpoint struct {
	// Name is the member's xdstp:// name, from its Resource wrapper.
	Name     string
	Endpoint Endpoint

	raw []byte
}

func decodeEndpoint(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	name := opts.WrapperName
	if name == "" {
		return registry.DecodeResult{}, fmt.Errorf("LbEndpoint has no name field: it must arrive in a named envoy.service.discovery.v3.Resource wrapper")
	}
	var errs registry.FieldErrors
	out := &LbEndpoint{Name: name, raw: opts.KeepRaw(raw)}
	_, err := lbendpoint.NewDecoder(&errs, 1).DecodeRaw(raw, &out.Endpoint, func() string { return "LbEndpoint" })
	if err != nil {
		return registry.DecodeResult{Name: name}, fmt.Errorf("cannot unmarshal LbEndpoint: %w", err)
	}
	if err := errs.Err(); err != nil {
		return registry.DecodeResult{Name: name}, err
	}
	return registry.DecodeResult{Name: name, Resource: out}, nil
}

// Proto returns the resource as an *envoy.config.endpoint.v3.LbEndpoint,
// decoded afresh, so callers may modify it.
func (e *LbEndpoint) Proto() proto.Message { return rawresource.Proto[endpointpb.LbEndpoint](e.raw) }

// Equal reports whether other is the same member sent as the same bytes.
func (e *LbEndpoint) Equal(other registry.Resource) bool {
	return rawresource.Equal(e, other, func(a, b *LbEndpoint) bool { return a.Name == b.Name && bytes.Equal(a.raw, b.raw) })
}

// String is the endpoint's address.
func (e *LbEndpoint) String() string { return e.Endpoint.Address.String() }

var _ registry.Equaler = (*LbEndpoint)(nil)

// GlobEndpoints returns the endpoints of a glob collection's members, in
// member-name order. It fails on a member that is not an *LbEndpoint.
func GlobEndpoints(c *registry.GlobCollection) ([]Endpoint, error) {
	eps := make([]Endpoint, 0, len(c.Members))
	for _, m := range c.Members {
		lb, ok := m.Resource.(*LbEndpoint)
		if !ok {
			return nil, fmt.Errorf("member %q of %q is %T, want *leds.LbEndpoint", m.Name, c.Name, m.Resource)
		}
		eps = append(eps, lb.Endpoint)
	}
	return eps, nil
}

// WatchGlob watches a glob collection of LbEndpoint resources on src.
func WatchGlob(src engine.Source, name string, w engine.TypedWatcher[*registry.GlobCollection]) (cancel func()) {
	return engine.Watch[*registry.GlobCollection](src, EndpointTypeURL, name, w)
}
