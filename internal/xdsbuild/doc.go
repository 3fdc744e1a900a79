// Package xdsbuild builds the small, valid xDS resources that tests,
// examples and the quickstart serve: an API listener using RDS, a route
// configuration, EDS clusters, cluster load assignments whose localities
// hold endpoints or name LEDS collections, and LbEndpointCollections.
package xdsbuild
