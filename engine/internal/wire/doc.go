// Package wire speaks the ADS protocol to one xDS server for the engine:
// it opens the stream, builds each request from the engine's
// subscriptions when the stream can take it, keeps the nonce and pending
// NACK per type, runs the does-not-exist timers of what it wrote, and
// decodes each response (stage 1 of the response path) for the engine
// to apply. A large one is decoded in parallel by a bounded set of
// workers while the receiving goroutine hands its parts, in order, to the
// engine as they are ready (pipeline.go).
//
// The package knows nothing of the cache or the watchers: the engine is a
// [Host], and a stream is a [Stream]: State of the World ([NewSotW]) or
// incremental ([NewDelta]), which share everything but the messages.
//
// Flow control (gRFC A88) runs through a [Gate]: every notification the
// engine schedules for a response holds the gate, and the next read waits
// until every watcher has called done.
package wire
