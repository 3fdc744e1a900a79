//go:build !race

package engine_test

// raceEnabled: the race detector slows the engine several times over, so
// time bounds are looser under it.
const raceEnabled = false
