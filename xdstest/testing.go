package xdstest

import "testing"

// NewServer starts a server for a test and closes it when the test ends;
// it fails the test if the server cannot start. The server's log lines go
// to t.Logf unless opts.Logf is set.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("xdstest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
