package passthrough_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/passthrough"
)

// fuzzTypes are the types FuzzDecode picks from: those whose decoding
// finds dependencies, and RouteConfiguration, the largest.
var fuzzTypes = []string{
	passthrough.ListenerTypeURL, passthrough.ClusterTypeURL,
	passthrough.ClusterLoadAssignmentTypeURL, passthrough.RouteConfigurationTypeURL,
}

// FuzzDecode checks that decoding never panics, that the same bytes
// always give the same name, error and dependencies, and that a valid
// resource keeps the bytes it was decoded from, as Raw and as Verbatim.
func FuzzDecode(f *testing.F) {
	seeds := [][]proto.Message{
		{outboundHTTPListener(), virtualInbound(), gatewayListener()},
		{blackHoleCluster(), passthroughCluster(), inboundCluster(), outboundCluster(), egressCluster()},
		{reviewsAssignment()},
		{routes80()},
	}
	for i, msgs := range seeds {
		for _, m := range msgs {
			raw, err := proto.Marshal(m)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), raw, "")
			f.Add(uint8(i)|0x80, raw, "")
		}
	}
	f.Add(uint8(0), []byte{}, "wrapped")
	regs := []*registry.Registry{passthrough.Registry(), passthrough.Options{Validation: passthrough.PGV}.Registry()}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte, wrapper string) {
		// The high bit picks the validation, the rest the type.
		rt, _ := regs[int(which>>7)].Lookup(fuzzTypes[int(which&0x7f)%len(fuzzTypes)])
		res, problem, err := registrytest.DecodeTwice(rt, raw, registry.DecodeOptions{WrapperName: wrapper})
		if problem != "" {
			t.Fatal(problem)
		}
		if err != nil || res.Resource == nil {
			return
		}
		r := res.Resource.(*passthrough.Resource)
		if r.Name() == "" || r.Name() != res.Name {
			t.Fatalf("resource name %q, result name %q: want the same, non-empty", r.Name(), res.Name)
		}
		if !bytes.Equal(r.Raw(), raw) {
			t.Fatalf("Raw = %x, want the bytes decoded %x", r.Raw(), raw)
		}
		if out, err := proto.Marshal(r.Verbatim()); err != nil || !bytes.Equal(out, raw) {
			t.Fatalf("Verbatim marshals to %x, %v; want %x", out, err, raw)
		}
	})
}
