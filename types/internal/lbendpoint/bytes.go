package lbendpoint

import (
	"math"
	"net/netip"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

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
	var met fieldSet
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b, &met)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType: // endpoint
			if !parseEndpoint(v, &e) {
				return false
			}
		case num == 2 && typ == protowire.VarintType: // health_status
			status, ok := varint(v, math.MaxInt32)
			if !ok {
				return false
			}
			e.HealthStatus = endpoint.HealthStatus(status)
		case num == 4 && typ == protowire.BytesType: // load_balancing_weight
			w, ok := parseUInt32Value(v)
			if !ok || w == 0 {
				return false
			}
			e.Weight = w
		default:
			return false
		}
	}
	if !met.has(1) {
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
	var met fieldSet
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b, &met)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType: // address
			if !parseAddress(v, &e.Address) {
				return false
			}
		case num == 3 && typ == protowire.BytesType: // hostname
			if !utf8.Valid(v) {
				return false
			}
			e.Hostname = string(v)
		default:
			return false
		}
	}
	return met.has(1)
}

// parseAddress reads an envoy.config.core.v3.Address holding a
// socket_address.
func parseAddress(b []byte, ap *netip.AddrPort) bool {
	var met fieldSet
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b, &met)
		if !ok {
			return false
		}
		b = rest
		if num != 1 || typ != protowire.BytesType || !parseSocketAddress(v, ap) {
			return false
		}
	}
	return met.has(1)
}

// parseSocketAddress reads an envoy.config.core.v3.SocketAddress with an
// IP literal and a port_value.
func parseSocketAddress(b []byte, ap *netip.AddrPort) bool {
	var met fieldSet
	var ip netip.Addr
	var port uint64
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b, &met)
		if !ok {
			return false
		}
		b = rest
		switch {
		case (num == 1 || num == 6) && typ == protowire.VarintType: // protocol, ipv4_compat: not used
			if _, ok := varint(v, math.MaxInt32); !ok {
				return false
			}
		case num == 2 && typ == protowire.BytesType: // address
			if !utf8.Valid(v) {
				return false
			}
			a, err := netip.ParseAddr(string(v))
			if err != nil {
				return false
			}
			ip = a
		case num == 3 && typ == protowire.VarintType: // port_value
			if port, ok = varint(v, math.MaxUint16); !ok {
				return false
			}
		case num == 5 && typ == protowire.BytesType: // resolver_name: not used
			if !utf8.Valid(v) {
				return false
			}
		default:
			return false
		}
	}
	if !met.has(2) || !met.has(3) {
		return false
	}
	*ap = netip.AddrPortFrom(ip, uint16(port))
	return true
}

// parseUInt32Value reads a google.protobuf.UInt32Value.
func parseUInt32Value(b []byte) (uint32, bool) {
	var met fieldSet
	var value uint64
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b, &met)
		if !ok || num != 1 || typ != protowire.VarintType {
			return 0, false
		}
		b = rest
		if value, ok = varint(v, math.MaxUint32); !ok {
			return 0, false
		}
	}
	return uint32(value), true
}

// fieldSet records the fields of a message met so far: a field met twice
// is a merge or a last-one-wins that only proto.Unmarshal should judge.
type fieldSet uint16

func (s fieldSet) has(num protowire.Number) bool { return s&(1<<num) != 0 }

// nextField splits the first field off b: its number, wire type, value
// bytes (for a varint, its encoding) and the rest. It refuses a field
// numbered above 15 or met before.
func nextField(b []byte, met *fieldSet) (num protowire.Number, typ protowire.Type, v, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num < 1 || num > 15 || met.has(num) {
		return 0, 0, nil, nil, false
	}
	*met |= 1 << num
	b = b[n:]
	switch typ {
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		_, n = protowire.ConsumeVarint(b)
		if n > 0 {
			v = b[:n]
		}
	default:
		return 0, 0, nil, nil, false
	}
	if n < 0 {
		return 0, 0, nil, nil, false
	}
	return num, typ, v, b[n:], true
}

// varint decodes an encoded varint that must not exceed limit: above it,
// proto's truncation to the field's width would have to be reproduced.
func varint(enc []byte, limit uint64) (uint64, bool) {
	x, n := protowire.ConsumeVarint(enc)
	return x, n == len(enc) && x <= limit
}
