package metrics

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTypeLabel(t *testing.T) {
	for _, tc := range []struct{ typeURL, want string }{
		{"type.googleapis.com/envoy.config.cluster.v3.Cluster", "envoy.config.cluster.v3.Cluster"},
		{"example.com/a/b.C", "b.C"},
		{"NoSlash", "NoSlash"},
	} {
		if got := TypeLabel(tc.typeURL); got != tc.want {
			t.Errorf("TypeLabel(%q) = %q, want %q", tc.typeURL, got, tc.want)
		}
	}
}

// TestAddWithoutProvider: a recorder on no meter provider takes counts,
// zero ones too, and closes twice without failing.
func TestAddWithoutProvider(t *testing.T) {
	r, err := New(nil, "target", "v0", func() (Gauges, bool) { return Gauges{}, false })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Add(Valid, 3, "server", "type.googleapis.com/x.Y")
	r.Add(Invalid, 0, "server", "")
	r.Close() // twice is fine
}
