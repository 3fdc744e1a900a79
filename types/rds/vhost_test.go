package rds_test

import (
	"testing"

	"github.com/xdsengine/xdsengine/types/rds"
)

func TestFindVirtualHost(t *testing.T) {
	rc := &rds.RouteConfiguration{VirtualHosts: []rds.VirtualHost{
		{Name: "universal", Domains: []string{"*"}},
		{Name: "prefix-short", Domains: []string{"api.*"}},
		{Name: "prefix-long", Domains: []string{"api.example.*"}},
		{Name: "suffix-short", Domains: []string{"*.com"}},
		{Name: "suffix-long", Domains: []string{"*.example.com"}},
		{Name: "exact", Domains: []string{"api.example.com", "Mixed.Example.COM"}},
		{Name: "exact-dup", Domains: []string{"api.example.com"}},
		{Name: "with-port", Domains: []string{"svc.example.com:8443"}},
		{Name: "any-port", Domains: []string{"svc.example.com:*"}},
	}}
	for _, tc := range []struct {
		host string
		want string // "" means no match
	}{
		{"api.example.com", "exact"}, // exact beats every wildcard; first of equal patterns wins
		{"API.EXAMPLE.COM", "exact"}, // case is ignored
		{"mixed.example.com", "exact"},
		{"www.example.com", "suffix-long"}, // longest suffix wins
		{"www.other.com", "suffix-short"},
		{"api.example.org", "prefix-long"}, // suffix would beat prefix, but none matches
		{"api.other.org", "prefix-short"},
		{"unrelated.net", "universal"},
		{"svc.example.com:8443", "with-port"}, // ports are compared as part of the host
		{"svc.example.com:9000", "any-port"},
		{"svc.example.com", "suffix-long"},
		{".com", "universal"}, // a wildcard stands for at least one character
		{"api.", "universal"},
		{"", "universal"},
	} {
		vh := rc.FindVirtualHost(tc.host)
		got := ""
		if vh != nil {
			got = vh.Name
		}
		if got != tc.want {
			t.Errorf("FindVirtualHost(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

func TestFindVirtualHostNoMatch(t *testing.T) {
	rc := &rds.RouteConfiguration{VirtualHosts: []rds.VirtualHost{
		{Name: "a", Domains: []string{"a.example.com"}},
		// Invalid patterns, which validation rejects, never match.
		{Name: "invalid", Domains: []string{"b.*.example.com", ""}},
	}}
	for _, host := range []string{"b.example.com", "b.x.example.com", "", "A.example.com."} {
		if vh := rc.FindVirtualHost(host); vh != nil {
			t.Errorf("FindVirtualHost(%q) = %q, want nil", host, vh.Name)
		}
	}
	if vh := (&rds.RouteConfiguration{}).FindVirtualHost("x"); vh != nil {
		t.Errorf("FindVirtualHost on an empty route table = %q, want nil", vh.Name)
	}
}

// TestFindVirtualHostReturnsElement checks that the result points into
// the resource rather than at a copy, so callers can compare identities.
func TestFindVirtualHostReturnsElement(t *testing.T) {
	rc := &rds.RouteConfiguration{VirtualHosts: []rds.VirtualHost{{Domains: []string{"x"}}}}
	if vh := rc.FindVirtualHost("x"); vh != &rc.VirtualHosts[0] {
		t.Error("FindVirtualHost returned a copy")
	}
}
