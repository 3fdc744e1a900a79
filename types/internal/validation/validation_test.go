package validation

import "testing"

func TestTypeName(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"type.googleapis.com/envoy.config.cluster.v3.Cluster", "envoy.config.cluster.v3.Cluster"},
		{"example.com/a/b/c.D", "c.D"},
		{"c.D", "c.D"},
		{"", ""},
	} {
		if got := TypeName(tt.url); got != tt.want {
			t.Errorf("TypeName(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
