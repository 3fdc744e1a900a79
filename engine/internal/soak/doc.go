// Package soak holds the engine's fault soak test: one engine, a primary
// and a fallback go-control-plane management server, each behind a TCP
// proxy the test controls, resources of every built-in type that change
// all the time, and faults at random — servers stopped and restarted,
// connections cut, stalled and slowed, invalid resources the engine must
// NACK, xRFC TP3 errors, responses over Config.MaxResponseBytes, deleted
// listeners and clusters — while watches are cancelled and replaced. The
// faults come in rounds; after each, with nothing new published, every
// watcher must catch up with the primary's current state. At the end a
// final state is published on both servers and every watcher must end
// with it; no goroutine may be left and the heap must stay bounded.
// Throughout, the watcher contract is checked.
//
// The package has no code of its own, only the test.
//
//	go test -race ./engine/internal/soak/                            # CI mode, about a minute
//	XDSENGINE_SOAK=30m go test -race -timeout 40m ./engine/internal/soak/  # long mode
//
// Every run prints its seed; XDSENGINE_SOAK_SEED replays the same faults
// (their order, kinds, targets and lengths, not the exact interleaving
// with the engine). XDSENGINE_SOAK_FAULTS limits the fault kinds, e.g.
// "stop,cut"; XDSENGINE_SOAK_VERBOSE=1 logs every fault and the engine's
// logs as they happen (with go test -v).
package soak
