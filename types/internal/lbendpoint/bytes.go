package lbendpoint

import (
	"math"
	"net/netip"

	"github.com/xdsengine/xdsengine/internal/protoscan"
	"github.com/xdsengine/xdsengine/types/endpoint"
)

// DecodeBytes converts the serialized bytes of a valid LbEndpoint into
// *out without building the message, which is most of the cost of a large
// EDS resource: proto.Unmarshal allocates some eight objects per endpoint.
//
// It reads the shape servers send: an endpoint with a socket address
// (IP literal and port_value), optionally a hostname, a non-zero weight
// and a health status. For anything else it reports false and records
// nothing: a field it does not read, a field sent twice (which proto
// would merge), bytes that do not parse, or a value Decode would refuse.
// The caller then unmarshals the message and calls Decode, which has the
// last word on every error, so both paths give the same result
// (FuzzDecodeBytes checks it).
func (d *Decoder) DecodeBytes(b []byte, out *endpoint.Endpoint) bool {
	e := endpoint.Endpoint{Weight: 1}
	// A field met twice is a merge or a last-one-wins that only
	// proto.Unmarshal should judge; so in the messages below.
	var met protoscan.FieldSet
	it := protoscan.Fields(b)
	for it.Next() {
		if !met.Add(it.Num) {
			return false
		}
		switch {
		case it.Is(1, protoscan.BytesType): // endpoint
			if !parseEndpoint(it.Value, &e) {
				return false
			}
		case it.Is(2, protoscan.VarintType): // health_status
			status, ok := it.VarintAtMost(math.MaxInt32)
			if !ok {
				return false
			}
			e.HealthStatus = endpoint.HealthStatus(status)
		case it.Is(4, protoscan.BytesType): // load_balancing_weight
			w, ok := parseUInt32Value(it.Value)
			if !ok || w == 0 {
				return false
			}
			e.Weight = w
		default:
			return false
		}
	}
	if it.Err() != nil || !met.Has(1) {
		return false
	}
	if _, dup := d.seen[e.Address]; dup {
		return false
	}
	d.seen[e.Address] = struct{}{}
	*out = e
	return true
}

// parseEndpoint reads an envoy.config.endpoint.v3.Endpoint: address and
// hostname only.
func parseEndpoint(b []byte, e *endpoint.Endpoint) bool {
	var met protoscan.FieldSet
	it := protoscan.Fields(b)
	for it.Next() {
		if !met.Add(it.Num) {
			return false
		}
		switch {
		case it.Is(1, protoscan.BytesType): // address
			if !parseAddress(it.Value, &e.Address) {
				return false
			}
		case it.Is(3, protoscan.BytesType): // hostname
			if !protoscan.ValidUTF8(it.Value) {
				return false
			}
			e.Hostname = string(it.Value)
		default:
			return false
		}
	}
	return it.Err() == nil && met.Has(1)
}

// parseAddress reads an envoy.config.core.v3.Address holding a
// socket_address.
func parseAddress(b []byte, ap *netip.AddrPort) bool {
	var met protoscan.FieldSet
	it := protoscan.Fields(b)
	for it.Next() {
		if !met.Add(it.Num) || !it.Is(1, protoscan.BytesType) || !parseSocketAddress(it.Value, ap) {
			return false
		}
	}
	return it.Err() == nil && met.Has(1)
}

// parseSocketAddress reads an envoy.config.core.v3.SocketAddress with an
// IP literal and a port_value.
func parseSocketAddress(b []byte, ap *netip.AddrPort) bool {
	var met protoscan.FieldSet
	var ip netip.Addr
	var port uint64
	it := protoscan.Fields(b)
	for it.Next() {
		if !met.Add(it.Num) {
			return false
		}
		switch {
		case it.Is(1, protoscan.VarintType) || it.Is(6, protoscan.VarintType): // protocol, ipv4_compat: not used
			// Above it, proto's truncation to the field's width would
			// have to be reproduced.
			if _, ok := it.VarintAtMost(math.MaxInt32); !ok {
				return false
			}
		case it.Is(2, protoscan.BytesType): // address
			if !protoscan.ValidUTF8(it.Value) {
				return false
			}
			a, err := netip.ParseAddr(string(it.Value))
			if err != nil {
				return false
			}
			ip = a
		case it.Is(3, protoscan.VarintType): // port_value
			var ok bool
			if port, ok = it.VarintAtMost(math.MaxUint16); !ok {
				return false
			}
		case it.Is(5, protoscan.BytesType): // resolver_name: not used
			if !protoscan.ValidUTF8(it.Value) {
				return false
			}
		default:
			return false
		}
	}
	if it.Err() != nil || !met.Has(2) || !met.Has(3) {
		return false
	}
	*ap = netip.AddrPortFrom(ip, uint16(port))
	return true
}

// parseUInt32Value reads a google.protobuf.UInt32Value.
func parseUInt32Value(b []byte) (uint32, bool) {
	var met protoscan.FieldSet
	var value uint64
	it := protoscan.Fields(b)
	for it.Next() {
		var ok bool
		if !met.Add(it.Num) || !it.Is(1, protoscan.VarintType) {
			return 0, false
		}
		if value, ok = it.VarintAtMost(math.MaxUint32); !ok {
			return 0, false
		}
	}
	return uint32(value), it.Err() == nil
}
