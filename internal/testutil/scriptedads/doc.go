// Package scriptedads is an Aggregated Discovery Service server for tests
// that must control, message by message, what an xDS client is told and
// must check exactly what it asks.
//
// Unlike a real management server (or go-control-plane's), it sends
// nothing by itself: no response, no nonce, no status, until the test
// says so. It records every request as received, without back-filling the
// node or any other field, so that a test can assert what the client put
// on the wire. Only the state-of-the-world StreamAggregatedResources method
// is implemented; DeltaAggregatedResources returns Unimplemented.
//
// A typical test:
//
//	srv := scriptedads.Start(t)
//	client := newClientUnderTest(srv.Addr())
//	st := srv.WaitStream(t)                      // the client opened a stream
//	req := st.RecvT(t)                           // its first request
//	// ... assert on req ...
//	nonce := st.SendT(t, scriptedads.Response(typeURL, "v1", res)) // nonce "1"
//	ack := st.RecvT(t)                           // the ACK carries nonce "1"
//	st.ExpectNoRequest(t, 50*time.Millisecond)   // and nothing else follows
//	st.Close(status.Error(codes.Unavailable, "bye"))
//
// Connectivity is controlled at the server: Stop drops every connection and
// refuses new ones while keeping the port, Restart accepts again on the same
// address, FailStreams makes every new stream fail at once (a server that is
// reachable but broken), and Close shuts everything down. Start registers
// Close with t.Cleanup, and no goroutine of the package outlives it.
//
// Requests are queued per stream without bound, so the client under test
// never blocks on a slow test; Send is synchronous, so when it returns the
// response has been handed to gRPC, in the order of Send calls.
package scriptedads
