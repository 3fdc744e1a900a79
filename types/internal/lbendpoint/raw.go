package lbendpoint

import (
	"math"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/endpoint"
)

// DecodeRaw converts the serialized LbEndpoint b into *out: from the
// bytes when DecodeBytes takes them, else through proto.Unmarshal and
// Decode, which records what is wrong under path. It reports whether the
// endpoint is valid. An error is proto.Unmarshal's, recorded nowhere:
// EDS then decodes the whole resource again, LEDS words it itself.
func (d *Decoder) DecodeRaw(b []byte, out *endpoint.Endpoint, path func() string) (bool, error) {
	if d.DecodeBytes(b, out) {
		return true, nil
	}
	if d.lb == nil {
		d.lb = new(endpointpb.LbEndpoint) // for every endpoint: Unmarshal resets it
	}
	if err := proto.Unmarshal(b, d.lb); err != nil {
		return false, err
	}
	return d.Decode(d.lb, out, path), nil
}

// WeightSum adds up the weights of a list of endpoints (a locality's
// lb_endpoints, a collection's entries), whose sum gRPC requires to fit
// in a uint32.
type WeightSum uint64

// Add adds ep's weight.
func (s *WeightSum) Add(ep *endpoint.Endpoint) { *s += WeightSum(ep.Weight) }

// Check records under field, in errs, a sum that does not fit.
func (s WeightSum) Check(errs *registry.FieldErrors, field func() string) {
	if s > math.MaxUint32 {
		errs.Addf(field(), "sum of endpoint weights %d exceeds %d", uint64(s), uint64(math.MaxUint32))
	}
}
