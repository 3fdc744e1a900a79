// Package mgmt starts the embedded go-control-plane management server of
// package controlplane for a test: it logs through the test and closes
// with it. See package controlplane for what the server does.
package mgmt
