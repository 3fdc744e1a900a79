// Package helperproc runs part of a benchmark in a process of its own:
// the test binary again, which an environment variable sends to a
// function of the test's instead of the tests, and which talks with the
// parent one line at a time over its standard input and output.
// Benchmarks use it so that the CPU time and heap they read are one
// party's alone: the relay's apart from its clients', a client's apart
// from its server's.
//
// The parent:
//
//	p, ready, err := helperproc.Start(myEnv + "=1")
//	defer p.Close()
//	reply, err := p.Do("cpu")
//
// The child, from the test's TestMain or an init function:
//
//	if os.Getenv(myEnv) == "1" {
//		err := helperproc.Serve(os.Stdin, os.Stdout, []string{addr}, handle)
//		...
//		os.Exit(0)
//	}
//
// A reply is a line "ok" and its fields, or "error: " and why.
package helperproc
