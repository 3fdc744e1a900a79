package rds_test

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/rds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ignoreUnexported = cmpopts.IgnoreUnexported(rds.RouteConfiguration{}, rds.Route{}, rds.HashPolicy{})

func TestDecodeValid(t *testing.T) {
	for _, c := range validCases() {
		t.Run(c.name, func(t *testing.T) {
			res, err := rds.Type.Decode(marshal(c), registry.DecodeOptions{})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if res.Name != c.msg.GetName() {
				t.Errorf("Decode name = %q, want %q", res.Name, c.msg.GetName())
			}
			got, ok := res.Resource.(*rds.RouteConfiguration)
			if !ok {
				t.Fatalf("Decode resource is %T, want *rds.RouteConfiguration", res.Resource)
			}
			// Dereferenced, or cmp would use Equal, which compares the
			// serialized form the wanted value lacks.
			if diff := cmp.Diff(*c.want, *got, ignoreUnexported, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decoded resource mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.msg, got.Proto(), protocmp.Transform()); diff != "" {
				t.Errorf("Proto() differs from the message sent (-sent +got):\n%s", diff)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	var cases []registrytest.Case
	for _, c := range allCases() {
		cases = append(cases, registrytest.Case{
			Name:     c.name,
			Raw:      marshal(c),
			WantName: c.resourceName(),
			WantErr:  c.wantErr,
			WantDeps: c.wantDeps,
		})
	}
	registrytest.Run(t, rds.Type, cases)
}

// TestDecoderAloneKeepsInvalidResources checks that a tool can look at a
// resource the validator rejects.
func TestDecoderAloneKeepsInvalidResources(t *testing.T) {
	raw, err := proto.Marshal(routeConfig("bad", vhost(nil, toCluster(prefix(""), ""))))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rds.Type.Decoder.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		t.Fatalf("Decoder.Decode: %v", err)
	}
	rc := res.Resource.(*rds.RouteConfiguration)
	if got := rc.VirtualHosts[0].Routes[0].Action.Kind; got != rds.ActionCluster {
		t.Errorf("action kind = %v, want %v", got, rds.ActionCluster)
	}
	if err := rds.Type.Validator.Validate(rc, registry.DecodeOptions{}); err == nil {
		t.Error("Validate = nil, want errors")
	}
}

func TestFromProto(t *testing.T) {
	m := routeConfig("inline", vhost([]string{"*"}, toCluster(prefix(""), "c")))
	rc, err := rds.FromProto(m)
	if err != nil {
		t.Fatalf("FromProto: %v", err)
	}
	m.VirtualHosts[0].Domains[0] = "changed"
	if got := rc.VirtualHosts[0].Domains[0]; got != "*" {
		t.Errorf("FromProto result follows changes to its argument: domain = %q", got)
	}
	raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(routeConfig("inline", vhost([]string{"*"}, toCluster(prefix(""), "c"))))
	res, err := rds.Type.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rc.Equal(res.Resource) {
		t.Error("FromProto and Decode of the same message are not Equal")
	}
}

func TestEqual(t *testing.T) {
	decode := func(m *routev3.RouteConfiguration) *rds.RouteConfiguration {
		raw, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rds.Type.Decode(raw, registry.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Resource.(*rds.RouteConfiguration)
	}
	a := decode(routeConfig("rc", vhost([]string{"*"}, toCluster(prefix(""), "a"))))
	b := decode(routeConfig("rc", vhost([]string{"*"}, toCluster(prefix(""), "b"))))
	if a.Equal(b) {
		t.Error("resources naming different clusters are Equal")
	}
	if a.Equal("not a resource") {
		t.Error("a resource is Equal to a string")
	}
	var nilRC *rds.RouteConfiguration
	if a.Equal(nilRC) || !nilRC.Equal(nilRC) {
		t.Error("Equal mishandles nil")
	}
}

func TestValidateRejectsOtherTypes(t *testing.T) {
	if err := rds.Type.Validator.Validate("not a route configuration", registry.DecodeOptions{}); err == nil {
		t.Error("Validate(string) = nil, want an error")
	}
	if refs := rds.Type.Refs("not a route configuration"); refs != nil {
		t.Errorf("Refs(string) = %v, want nil", refs)
	}
}

func TestKindStrings(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{rds.PathMatchRegex.String(), "safe_regex"},
		{rds.HeaderMatchPresent.String(), "present"},
		{rds.ActionWeightedClusters.String(), "weighted_clusters"},
		{rds.HashPolicyChannelID.String(), "channel_id"},
		{rds.ActionKind(99).String(), "unknown"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
