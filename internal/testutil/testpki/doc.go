// Package testpki makes throwaway certificate authorities and
// certificates at test time, so that TLS and mTLS tests run against real
// handshakes without key material checked into the repository.
//
// Keys are ECDSA P-256, which is fast enough to make fresh ones per test.
// Certificates are valid from an hour ago to a day from now.
//
//	ca := testpki.NewCA(t, "test CA")
//	srv := ca.Server(t, "localhost", "127.0.0.1") // SANs: DNS names or IPs
//	cli := ca.Client(t, "client-1")
//	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM)
//	tlsCfg := &tls.Config{Certificates: []tls.Certificate{srv.TLS}, ClientCAs: ca.Pool}
//
// ServiceAccountJSON makes a Google service account key file whose token
// endpoint the test chooses, for Application Default Credentials without
// Google.
package testpki
