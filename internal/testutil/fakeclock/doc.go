// Package fakeclock provides a manually driven clock so that tests of
// timer-based code (backoff, watchdogs, resource-not-found timers) are
// deterministic and take no real time.
//
// A *Clock has the same shape as the engine's Clock interface (Now and
// AfterFunc), so it can be passed wherever the engine expects one; this
// package deliberately does not import the engine so that the engine's own
// tests can use it without an import cycle.
//
// Time only moves when the test calls Advance. Timers that fall due run
// synchronously in the goroutine that called Advance, in deadline order,
// so when Advance returns every due timer function has returned.
// Because the code under test usually arms its timers from other
// goroutines, tests first wait for the timer to exist and then advance:
//
//	clk := fakeclock.New(time.Unix(0, 0))
//	cfg.Clock = clk                     // e.g. the engine's Config.Clock
//	clk.WaitForTimer(t, 15*time.Second) // the code under test armed it
//	clk.Advance(15 * time.Second)       // and now it has fired
//
// Unlike time.AfterFunc, a timer with a non-positive duration does not run
// by itself: it is due at once and runs on the next Advance (Advance(0)
// suffices). Running it inside AfterFunc would deadlock callers that arm
// timers while holding a lock the timer function takes.
package fakeclock
