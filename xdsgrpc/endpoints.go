package xdsgrpc

import (
	"net/netip"
	"os"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/resolver"
	rhresolver "google.golang.org/grpc/resolver/ringhash"

	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/types/eds"
)

// endpointsOf groups the usable endpoints (gRFC A27: HEALTHY or UNKNOWN)
// by priority and locality, each with the weight grpc-go gives it
// (gRFC A113: its share of its locality times its locality's share of
// the priority, in fixed point), which ring_hash reads, and with its
// hash key (gRFC A76) when ring_hash is the policy.
func endpointsOf(cla *eds.ClusterLoadAssignment, ringHash bool) ([][]localityConfig, map[string]lrs.Locality) {
	var hashKeys map[netip.AddrPort]string
	if ringHash && os.Getenv("GRPC_XDS_ENDPOINT_HASH_KEY_BACKWARD_COMPAT") != "true" {
		hashKeys = endpointHashKeys(cla)
	}
	var prios [][]localityConfig
	byAddr := map[string]lrs.Locality{}
	for _, l := range cla.Localities {
		for int(l.Priority) >= len(prios) {
			prios = append(prios, nil)
		}
		prios[l.Priority] = append(prios[l.Priority], localityConfig{id: l.ID, weight: l.Weight})
	}
	for p, ls := range prios {
		var localitySum uint64
		for _, l := range ls {
			localitySum += uint64(l.weight)
		}
		i := 0
		for _, l := range cla.Localities {
			if int(l.Priority) != p {
				continue
			}
			lc := &prios[p][i]
			i++
			var endpointSum uint64
			for _, e := range l.Endpoints {
				endpointSum += uint64(e.Weight)
			}
			loc := lrs.Locality{Region: l.ID.Region, Zone: l.ID.Zone, SubZone: l.ID.SubZone}
			for _, e := range l.Endpoints {
				if !e.Usable() {
					continue
				}
				ep := resolver.Endpoint{Addresses: []resolver.Address{{Addr: e.Address.String()}}}
				for _, a := range e.AdditionalAddresses {
					ep.Addresses = append(ep.Addresses, resolver.Address{Addr: a.String()})
				}
				w := fixedPointMultiply(fraction(uint64(e.Weight), endpointSum), fraction(uint64(l.Weight), localitySum))
				if w == 0 {
					w = 1
				}
				ep = weight.Set(ep, weight.EndpointInfo{Weight: w})
				if k := hashKeys[e.Address]; k != "" {
					ep = rhresolver.SetHashKey(ep, k)
				}
				for _, a := range ep.Addresses {
					byAddr[a.Addr] = loc
				}
				lc.endpoints = append(lc.endpoints, ep)
			}
		}
	}
	if len(prios) == 0 {
		prios = [][]localityConfig{nil}
	}
	return prios, byAddr
}

// fraction is numerator/denominator in UQ1.31 fixed point, as grpc-go
// normalizes weights (gRFC A113).
func fraction(numerator, denominator uint64) uint32 {
	if denominator == 0 {
		return 0
	}
	return uint32(numerator << 31 / denominator)
}

func fixedPointMultiply(a, b uint32) uint32 { return uint32(uint64(a) * uint64(b) >> 31) }

// endpointHashKeys reads the "envoy.lb" hash_key metadata of each endpoint
// (gRFC A76), which package eds does not decode, from the resource as
// sent. A composed resource's LEDS endpoints are not in it.
func endpointHashKeys(cla *eds.ClusterLoadAssignment) map[netip.AddrPort]string {
	pb, ok := cla.Proto().(*endpointpb.ClusterLoadAssignment)
	if !ok {
		return nil
	}
	var out map[netip.AddrPort]string
	for _, l := range pb.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			key := e.GetMetadata().GetFilterMetadata()["envoy.lb"].GetFields()["hash_key"].GetStringValue()
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			if key == "" || sa == nil {
				continue
			}
			addr, err := netip.ParseAddr(sa.GetAddress())
			if err != nil {
				continue
			}
			if out == nil {
				out = map[netip.AddrPort]string{}
			}
			out[netip.AddrPortFrom(addr, uint16(sa.GetPortValue()))] = key
		}
	}
	return out
}
