package eds

import (
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// Field numbers of the repeated fields splitAssignment leaves as bytes.
const (
	claEndpointsField      = 2 // ClusterLoadAssignment.endpoints
	localityEndpointsField = 2 // LocalityLbEndpoints.lb_endpoints
)

// localityBytes is one LocalityLbEndpoints as sent.
type localityBytes struct {
	raw       []byte
	endpoints int // how many lb_endpoints it holds
}

// eachEndpoint calls f with the bytes of each lb_endpoints entry, in
// order, while f returns true; it reports whether every call did.
func (l localityBytes) eachEndpoint(f func([]byte) bool) bool {
	it := protoscan.Fields(l.raw)
	for it.Next() {
		if it.Is(localityEndpointsField, protoscan.BytesType) && !f(it.Value) {
			return false
		}
	}
	return it.Err() == nil
}

// parses reports whether every lb_endpoints entry unmarshals.
func (l localityBytes) parses() bool {
	var lb endpointpb.LbEndpoint
	return l.eachEndpoint(func(b []byte) bool { return proto.Unmarshal(b, &lb) == nil })
}

// splitAssignment unmarshals a ClusterLoadAssignment except for its
// localities' lb_endpoints, and returns the localities' bytes, in order,
// for those. Each repeated message entry unmarshals on its own, so
// leaving them out changes nothing else. It reports false when the bytes
// do not parse, leaving the reason to proto.Unmarshal of the whole.
func splitAssignment(raw []byte) (*endpointpb.ClusterLoadAssignment, []localityBytes, bool) {
	var locs []localityBytes
	rest, ok := without(raw, claEndpointsField, func(v []byte) { locs = append(locs, localityBytes{raw: v}) })
	if !ok {
		return nil, nil, false
	}
	cla := &endpointpb.ClusterLoadAssignment{}
	if proto.Unmarshal(rest, cla) != nil {
		return nil, nil, false
	}
	cla.Endpoints = make([]*endpointpb.LocalityLbEndpoints, len(locs))
	var scratch []byte
	for i := range locs {
		l := &locs[i]
		scratch = scratch[:0]
		fields, ok := withoutInto(scratch, l.raw, localityEndpointsField, func([]byte) { l.endpoints++ })
		if !ok {
			return nil, nil, false
		}
		scratch = fields
		m := &endpointpb.LocalityLbEndpoints{}
		if proto.Unmarshal(fields, m) != nil {
			return nil, nil, false
		}
		cla.Endpoints[i] = m
	}
	return cla, locs, true
}

// without returns b without its fields numbered num of the bytes wire
// type, calling f with each one's value. It reports false if b does not
// parse as fields.
func without(b []byte, num protoscan.Number, f func(value []byte)) ([]byte, bool) {
	return withoutInto(nil, b, num, f)
}

// withoutInto is without, appending to dst.
func withoutInto(dst, b []byte, num protoscan.Number, f func(value []byte)) ([]byte, bool) {
	it := protoscan.Fields(b)
	for it.Next() {
		if it.Is(num, protoscan.BytesType) {
			f(it.Value)
			continue
		}
		dst = append(dst, it.Raw()...)
	}
	return dst, it.Err() == nil
}
