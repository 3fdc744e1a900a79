package mgmt

import (
	"testing"

	"github.com/xdsengine/xdsengine/internal/controlplane"
)

// Server, Resource, Options and Counts are controlplane's.
type (
	Server   = controlplane.Server
	Resource = controlplane.Resource
	Options  = controlplane.Options
	Counts   = controlplane.Counts
)

// Start starts a server for the test and closes it with the test.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	s, err := controlplane.Start(opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// R, Wrapped, IsACK and IsNACK are controlplane's.
var (
	R       = controlplane.R
	Wrapped = controlplane.Wrapped
	IsACK   = controlplane.IsACK
	IsNACK  = controlplane.IsNACK
)
