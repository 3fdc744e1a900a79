// Package storage is the contract between an xDS engine and its
// last-known-good store, as database/sql/driver is between database/sql
// and a driver: the engine (engine.Config.Store) writes what it accepts
// through a [Store] and reads it back when no server of an authority
// answers; a store implementation (package lastgood keeps one in a file)
// imports this package, never the engine.
//
// A store knows bytes, versions and times, never decoded values: the
// engine decodes and validates what it loads under the registry of the
// day. The engine calls a Store off its response path and never two
// calls at once; engine.Engine.Close waits for a call under way, so a
// Load or Apply must return in bounded time.
//
// What the engine keeps, and when it serves it, is the engine's package
// doc's "The last-known-good store": in short, a resource is kept until
// its server deletes it, it ages out, or the digest (the node and the
// bootstrap) changes; a cancelled watch forgets nothing.
package storage
