package lbendpoint

import (
	"net/netip"
	"strconv"

	"github.com/xdsengine/xdsengine/registry"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/xdsengine/xdsengine/types/endpoint"
)

// Decoder validates the LbEndpoints of one resource. It remembers every
// address it has accepted because gRPC rejects a resource that lists the
// same address twice (grpc-go parseEndpoints, C-core LocalityParse).
type Decoder struct {
	errs *registry.FieldErrors
	seen map[netip.AddrPort]struct{}
	lb   *endpointpb.LbEndpoint // DecodeRaw's, made on first use
}

// NewDecoder returns a Decoder that records problems in errs. sizeHint is
// the number of endpoints expected, to size the duplicate set once.
func NewDecoder(errs *registry.FieldErrors, sizeHint int) *Decoder {
	return &Decoder{errs: errs, seen: make(map[netip.AddrPort]struct{}, sizeHint)}
}

// Decode converts lb into *out and reports whether lb is valid. path
// returns the field path of lb for error messages; it is called only when
// something is wrong, so the valid path builds no strings.
func (d *Decoder) Decode(lb *endpointpb.LbEndpoint, out *endpoint.Endpoint, path func() string) bool {
	ok := true
	out.HealthStatus = endpoint.HealthStatus(lb.GetHealthStatus())
	out.Weight = 1
	if w := lb.GetLoadBalancingWeight(); w != nil {
		if w.GetValue() == 0 {
			d.errs.Add(path()+".load_balancing_weight", "must be greater than 0")
			ok = false
		} else {
			out.Weight = w.GetValue()
		}
	}
	ep := lb.GetEndpoint()
	if ep == nil {
		if lb.GetEndpointName() != "" {
			d.errs.Add(path()+".endpoint_name", "named endpoints are not supported; endpoint must be set")
		} else {
			d.errs.Add(path()+".endpoint", "field not present")
		}
		return false
	}
	out.Hostname = ep.GetHostname()
	if ap, good := d.address(ep.GetAddress(), path, -1); good {
		out.Address = ap
	} else {
		ok = false
	}
	if extra := ep.GetAdditionalAddresses(); len(extra) > 0 {
		out.AdditionalAddresses = make([]netip.AddrPort, 0, len(extra))
		for i, a := range extra {
			if ap, good := d.address(a.GetAddress(), path, i); good {
				out.AdditionalAddresses = append(out.AdditionalAddresses, ap)
			} else {
				ok = false
			}
		}
	}
	return ok
}

// address validates one envoy.config.core.v3.Address: the primary one when
// extra < 0, otherwise additional_addresses[extra].
func (d *Decoder) address(a *corepb.Address, path func() string, extra int) (netip.AddrPort, bool) {
	field := func() string {
		if extra < 0 {
			return path() + ".endpoint.address"
		}
		return path() + ".endpoint.additional_addresses[" + strconv.Itoa(extra) + "].address"
	}
	if a == nil {
		d.errs.Add(field(), "field not present")
		return netip.AddrPort{}, false
	}
	sa := a.GetSocketAddress()
	if sa == nil {
		d.errs.Add(field()+".socket_address", "field not present; only socket addresses are supported")
		return netip.AddrPort{}, false
	}
	ok := true
	ip, err := netip.ParseAddr(sa.GetAddress())
	if err != nil {
		d.errs.Addf(field()+".socket_address.address", "%q is not an IPv4 or IPv6 address", sa.GetAddress())
		ok = false
	}
	var port uint32
	switch ps := sa.GetPortSpecifier().(type) {
	case *corepb.SocketAddress_PortValue:
		port = ps.PortValue
		if port > 65535 {
			d.errs.Addf(field()+".socket_address.port_value", "%d out of range [0, 65535]", port)
			ok = false
		}
	case *corepb.SocketAddress_NamedPort:
		d.errs.Add(field()+".socket_address.named_port", "named ports are not supported; port_value must be set")
		ok = false
	default:
		d.errs.Add(field()+".socket_address.port_value", "field not present")
		ok = false
	}
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := netip.AddrPortFrom(ip, uint16(port))
	if _, dup := d.seen[ap]; dup {
		d.errs.Addf(field()+".socket_address", "duplicate endpoint address %s", ap)
		return netip.AddrPort{}, false
	}
	d.seen[ap] = struct{}{}
	return ap, true
}

// DuplicateAddress returns the first address that appears twice in eps,
// for checks across resources (an EDS resource composed with its LEDS
// collections).
func DuplicateAddress(seen map[netip.AddrPort]struct{}, eps []endpoint.Endpoint) (netip.AddrPort, bool) {
	for i := range eps {
		if _, dup := seen[eps[i].Address]; dup {
			return eps[i].Address, true
		}
		seen[eps[i].Address] = struct{}{}
		for _, a := range eps[i].AdditionalAddresses {
			if _, dup := seen[a]; dup {
				return a, true
			}
			seen[a] = struct{}{}
		}
	}
	return netip.AddrPort{}, false
}
