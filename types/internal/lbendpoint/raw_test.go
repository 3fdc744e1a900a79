package lbendpoint

import (
	"math"
	"net/netip"
	"strings"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/endpoint"
)

// TestDecodeRaw: each way through DecodeRaw, and what it records.
func TestDecodeRaw(t *testing.T) {
	tests := []struct {
		name      string
		raw       []byte
		valid     bool
		unmarshal bool   // proto.Unmarshal's error
		want      string // the address of a valid endpoint
		recorded  string // in the errors, under the path
	}{
		{name: "from the bytes", raw: mustMarshal(t, lbEndpoint("10.0.0.1", 80, nil)), valid: true, want: "10.0.0.1:80"},
		{name: "through the message", raw: mustMarshal(t, lbEndpoint("10.0.0.2", 81, func(lb *endpointpb.LbEndpoint) {
			lb.Metadata = &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"f": {}}}
		})), valid: true, want: "10.0.0.2:81"},
		{name: "invalid", raw: mustMarshal(t, lbEndpoint("10.0.0.3", 80, func(lb *endpointpb.LbEndpoint) {
			lb.LoadBalancingWeight = wrapperspb.UInt32(0)
		})), recorded: "lb.load_balancing_weight: must be greater than 0"},
		{name: "does not parse", raw: []byte{0x0a, 0x05}, unmarshal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var errs registry.FieldErrors
			d := NewDecoder(&errs, 1)
			var out endpoint.Endpoint
			valid, err := d.DecodeRaw(tc.raw, &out, func() string { return "lb" })
			if valid != tc.valid || (err != nil) != tc.unmarshal {
				t.Fatalf("DecodeRaw = %v, %v; want valid %v, an unmarshal error %v", valid, err, tc.valid, tc.unmarshal)
			}
			if valid && out.Address != netip.MustParseAddrPort(tc.want) {
				t.Errorf("address %v, want %s", out.Address, tc.want)
			}
			got := ""
			if errs.Err() != nil {
				got = errs.Err().Error()
			}
			if (tc.recorded == "") != (got == "") || !strings.Contains(got, tc.recorded) {
				t.Errorf("recorded %q, want %q", got, tc.recorded)
			}
		})
	}
}

func TestWeightSum(t *testing.T) {
	for _, tc := range []struct {
		weights []uint32
		want    string
	}{
		{[]uint32{1, 2}, ""},
		{[]uint32{math.MaxUint32}, ""},
		{[]uint32{math.MaxUint32, 1}, "entries: sum of endpoint weights 4294967296 exceeds 4294967295"},
	} {
		var sum WeightSum
		for _, w := range tc.weights {
			sum.Add(&endpoint.Endpoint{Weight: w})
		}
		var errs registry.FieldErrors
		sum.Check(&errs, func() string { return "entries" })
		got := ""
		if errs.Err() != nil {
			got = errs.Err().Error()
		}
		if got != tc.want {
			t.Errorf("weights %v: recorded %q, want %q", tc.weights, got, tc.want)
		}
	}
}
