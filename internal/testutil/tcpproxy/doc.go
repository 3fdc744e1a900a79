// Package tcpproxy is a real TCP proxy on the loopback interface that tests
// put between a client and a server to cut and restore connectivity at the
// network level, without the server noticing anything but closed
// connections and without touching the client's configuration.
//
// A test points the client at the proxy instead of the server:
//
//	p := tcpproxy.Start(t, server.Addr())
//	client := dial(p.Addr())
//	p.Cut()     // every connection drops; new ones are accepted and closed at once
//	p.Restore() // connections go through again, on the same address
//	p.Pause()   // connections stay open but no byte moves: a stalled path
//	p.Resume()  // what waited goes through, in order
//	p.SetDelay(50 * time.Millisecond) // latency on every chunk; 0 removes it
//
// Cut accepts and closes new connections rather than closing the listener,
// so that the port stays reserved for the proxy and the client sees the
// same failures it would see against a server that is up but unreachable
// through, say, a load balancer, rather than a port someone else could take.
package tcpproxy
