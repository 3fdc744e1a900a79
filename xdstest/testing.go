package xdstest

// TB is what NewServer needs of a test or benchmark; testing.TB, *testing.T
// and *testing.B have it. It is an interface of this package, not
// testing.TB, so that this package does not import testing: a program that
// runs a server with [Start] (xdsrelay's --demo) then links no test
// framework.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// NewServer starts a server for a test and closes it when the test ends;
// it fails the test if the server cannot start. The server's log lines go
// to t.Logf unless opts.Logf is set.
func NewServer(t TB, opts Options) *Server {
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
