// Package serial runs callbacks one at a time, in order, on a goroutine of
// its own: the engine's watcher callbacks and a graph watch's deliveries.
// Scheduling never blocks, so it can be done under a lock, and the order
// callbacks run in is the order they were scheduled in.
package serial
