// Package lbendpoint converts and validates envoy.config.endpoint.v3.LbEndpoint
// messages into [endpoint.Endpoint] values. EDS (the lb_endpoints of each locality) and LEDS (the entries of
// an LbEndpointCollection) both use it, so that gRFC A95's "validated
// exactly like an EDS lb_endpoints entry" holds by construction.
package lbendpoint
