// Package transport is how an engine reaches xDS servers: a [Builder]
// makes a [Transport] per server entry of the bootstrap, and a Transport
// opens bidirectional streams of serialized messages. The engine knows
// nothing of gRPC beyond this interface; tests and benchmarks may plug
// in an in-memory transport, and programs their own dialing.
//
// [GRPC] is the default: one gRPC client connection per server, with the
// channel and call credentials its bootstrap entry names
// (bootstrap.DefaultCredentials, or a set of the program's own with
// [GRPCWithCredentials]). It implements [ServerChecker], so that a
// credential file that cannot be used fails engine.New rather than every
// connection, and its streams implement [BuffersSender], so that an ACK's
// names go out without a copy, and [Recycler], so that a response is read
// into the memory of one the engine has handled.
//
// One transport per server serves every xDS service on it: the engine
// lends its own to load reporting (engine.Engine.Transport), as gRPC
// keeps one connection per server.
package transport
