// Package lrs is the client side of the Load Reporting Service
// (envoy.service.load_stats.v3), as gRPC clients report load (gRFC A27):
// when a Cluster's lrs_server is "self", the client tells the management
// server, per cluster and locality, how many calls it started, how many
// succeeded and failed, how many are in progress, named load metrics, and
// the calls it dropped by category.
//
// A [Client] reports for one engine, over the engine's transport and
// credentials for each server, with its node, clock and backoff: the
// bootstrap that configures the engine configures load reporting too.
// [Client.ReportLoad] (or [Client.ReportLoadToSelf], given the server a
// cds.Cluster came from) returns a [Store] to record calls in, from any
// number of goroutines, and a cancel function. One LRS stream per server
// carries every store reporting to it, from the first ReportLoad to the
// last cancel.
//
// The server's LoadStatsResponse decides what is reported and when: every
// load_reporting_interval, the clusters it lists, or all of them with
// send_all_clusters. Each report holds what was recorded since the last
// one sent, with the interval measured (load_report_interval), and resets
// it; a report that cannot be sent is kept for the next stream, so a
// restart of the server neither loses nor counts anything twice.
// Recording a call is a few atomic additions on a [LocalityStats] (see
// BENCHMARKS.md).
package lrs
