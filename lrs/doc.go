// Package lrs is the client side of the Load Reporting Service
// (envoy.service.load_stats.v3), as gRPC clients report load (gRFC A27):
// when a Cluster's lrs_server is "self", the client tells the management
// server, per cluster and locality, how many calls it started, how many
// succeeded and failed, how many are in progress, named load metrics, and
// the calls it dropped by category.
//
// A [Client] reports for one engine, over the engine's own connection to
// each server (one connection per server for ADS and LRS, as gRPC keeps),
// with its node, clock and backoff: the bootstrap that configures the
// engine configures load reporting too. [Client.ReportLoad], given the
// server a cds.Cluster came from (engine.Update.Server, the bootstrap
// entry the engine used), returns a [Store] to record calls in, from any
// number of goroutines, and a cancel function. One LRS stream per server
// carries every store reporting to it, from the first ReportLoad to the
// last cancel.
//
// # Recording
//
// Keep the [LocalityStats] of each locality a cluster's calls go to
// ([Store.Locality], once per locality, e.g. when the endpoints change)
// and record every call on it: a call, started and finished, is then a
// few atomic additions, with no lock, however many cores record at once.
// [Store.CallStarted], [Store.CallFinished] and [Store.CallServerLoad]
// take the locality instead, and look it up (a sync.Map keyed by the
// Locality's strings) on every call, which costs several times as much.
// BenchmarkRecordCall measures both, with every core recording; its
// figures are in BENCHMARKS.md.
//
// # Reporting
//
// Each LoadStatsResponse of the server begins a reporting period, at
// once, with its settings: load_reporting_interval ([DefaultInterval]
// when unset, zero, negative or invalid), and the clusters it lists, or
// all of them with send_all_clusters. At the end of the period the
// client reports and begins the next. A cluster the server asked for
// before keeps what it recorded since its last report; one new to the
// list is billed from that response on, and what it recorded before is
// dropped, as Envoy's load reporter drops it. A store made while the
// server asks for its cluster, or before the server's first response, is
// billed from its making.
//
// Each report holds what was recorded since the last one sent, with the
// interval measured (load_report_interval), and resets it; a report that
// cannot be sent is kept for the next stream, so a restart of the server
// neither loses nor counts anything twice.
//
// Nothing recorded before a cancel is lost by it: a cancelled store's
// load goes in the server's next report, and the last cancel of a
// server's stores, or [Client.Close], sends that report at once, then
// waits for the server to read it and end the stream, for at most
// [FinalReportTimeout] on the engine's clock.
package lrs
