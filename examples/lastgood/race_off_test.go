//go:build !race

package main

// raceEnabled: the race detector slows everything several times over, so
// time bounds are looser under it.
const raceEnabled = false
