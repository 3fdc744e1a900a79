package lds_test

import (
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecodeValid(t *testing.T) {
	for _, c := range validCases() {
		t.Run(c.name, func(t *testing.T) {
			res, err := lds.Type.Decode(marshal(c), registry.DecodeOptions{})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if res.Name != c.msg.GetName() {
				t.Errorf("Decode name = %q, want %q", res.Name, c.msg.GetName())
			}
			got, ok := res.Resource.(*lds.Listener)
			if !ok {
				t.Fatalf("Decode resource is %T, want *lds.Listener", res.Resource)
			}
			// Dereferenced, or cmp would use Equal, which compares the
			// serialized form the wanted value lacks.
			if diff := cmp.Diff(*c.want, *got,
				cmpopts.IgnoreUnexported(lds.Listener{}),
				cmpopts.IgnoreFields(lds.Listener{}, "RouteConfig"),
				cmpopts.EquateEmpty(),
			); diff != "" {
				t.Errorf("decoded resource mismatch (-want +got):\n%s", diff)
			}
			checkInlineRouteConfig(t, c, got.RouteConfig)
			if diff := cmp.Diff(c.msg, got.Proto(), protocmp.Transform()); diff != "" {
				t.Errorf("Proto() differs from the message sent (-sent +got):\n%s", diff)
			}
		})
	}
}

// checkInlineRouteConfig checks that an inline route configuration
// decodes as package rds decodes the same message on its own.
func checkInlineRouteConfig(t *testing.T, c testCase, got *rds.RouteConfiguration) {
	t.Helper()
	if c.wantRouteConfig == nil {
		if got != nil {
			t.Errorf("RouteConfig = %+v, want nil", got)
		}
		return
	}
	if got == nil {
		t.Fatal("RouteConfig = nil, want the inline route configuration")
	}
	want, err := rds.FromProto(c.wantRouteConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !want.Equal(got) {
		t.Errorf("RouteConfig = %+v, want %+v", got, want)
	}
	if diff := cmp.Diff(*want, *got, cmpopts.IgnoreUnexported(rds.RouteConfiguration{}, rds.Route{}, rds.HashPolicy{})); diff != "" {
		t.Errorf("RouteConfig mismatch (-want +got):\n%s", diff)
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
	registrytest.Run(t, lds.Type, cases)
}

// TestDecoderAloneKeepsInvalidResources checks that a tool can look at a
// Listener the validator rejects.
func TestDecoderAloneKeepsInvalidResources(t *testing.T) {
	raw, err := proto.Marshal(rdsListener(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = adsRDS("") }))
	if err != nil {
		t.Fatal(err)
	}
	res, err := lds.Type.Decoder.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		t.Fatalf("Decoder.Decode: %v", err)
	}
	l := res.Resource.(*lds.Listener)
	if len(l.HTTPFilters) != 1 || l.HTTPFilters[0].Name != "router" {
		t.Errorf("HTTPFilters = %+v, want the router", l.HTTPFilters)
	}
	if err := lds.Type.Validator.Validate(l, registry.DecodeOptions{}); err == nil {
		t.Error("Validate = nil, want errors")
	}
}

func TestEqual(t *testing.T) {
	decode := func(c testCase) *lds.Listener {
		res, err := lds.Type.Decode(marshal(c), registry.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Resource.(*lds.Listener)
	}
	valid := validCases()
	a, b := decode(valid[0]), decode(valid[1])
	if a.Equal(b) {
		t.Error("different Listeners are Equal")
	}
	if !a.Equal(decode(valid[0])) {
		t.Error("two decodings of the same Listener are not Equal")
	}
	if a.Equal(a.RouteConfig) {
		t.Error("a Listener is Equal to a nil RouteConfiguration")
	}
	var nilListener *lds.Listener
	if a.Equal(nilListener) || !nilListener.Equal(nilListener) {
		t.Error("Equal mishandles nil")
	}
}

func TestValidateRejectsOtherTypes(t *testing.T) {
	if err := lds.Type.Validator.Validate("not a listener", registry.DecodeOptions{}); err == nil {
		t.Error("Validate(string) = nil, want an error")
	}
	if refs := lds.Type.Refs("not a listener"); refs != nil {
		t.Errorf("Refs(string) = %v, want nil", refs)
	}
}
