#!/usr/bin/env bash
# csds-grpcurl.sh: ask an xDS engine for its CSDS dump with grpcurl.
#
# Uses the grpcurl named by $GRPCURL, else the one on PATH, else installs
# grpcurl v1.9.3 (go install, into a temporary GOBIN, so nothing is left
# behind); then builds and starts csds/internal/csdsdemo (an embedded
# go-control-plane server, an engine watching a listener tree, and an admin
# gRPC server with CSDS and reflection on a fixed loopback port), runs
#
#   grpcurl -plaintext $CSDS_ADDR envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus
#
# prints what grpcurl printed, and stops the demo.
#
# Environment: CSDS_ADDR (default 127.0.0.1:50051), the admin address;
# GRPCURL, the grpcurl to run.
set -euo pipefail

addr="${CSDS_ADDR:-127.0.0.1:50051}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
demo_pid=""

cleanup() {
	if [[ -n "$demo_pid" ]]; then
		kill "$demo_pid" 2>/dev/null || true
		wait "$demo_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# An installed grpcurl saves a download and a build of a few minutes.
grpcurl="${GRPCURL:-$(command -v grpcurl || true)}"
if [[ -z "$grpcurl" ]]; then
	echo "+ go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3" >&2
	# From outside the module, so this repository's go.mod plays no part.
	(cd "$work" && GOBIN="$work/bin" GOWORK=off go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3)
	grpcurl="$work/bin/grpcurl"
fi

# A built binary rather than "go run", so that the PID killed on exit is
# the demo itself and not the go command above it.
echo "+ go build ./csds/internal/csdsdemo" >&2
(cd "$root" && go build -o "$work/bin/csdsdemo" ./csds/internal/csdsdemo)

"$work/bin/csdsdemo" -addr "$addr" >"$work/demo.out" 2>"$work/demo.log" &
demo_pid=$!

# The demo prints "ready" once its watches have settled and CSDS serves.
for _ in $(seq 1 300); do
	if grep -q '^ready' "$work/demo.out"; then
		break
	fi
	if ! kill -0 "$demo_pid" 2>/dev/null; then
		echo "csdsdemo exited early:" >&2
		cat "$work/demo.log" >&2
		demo_pid=""
		exit 1
	fi
	sleep 0.1
done
if ! grep -q '^ready' "$work/demo.out"; then
	echo "csdsdemo not ready after 30 s:" >&2
	cat "$work/demo.log" >&2
	exit 1
fi
cat "$work/demo.out" >&2

echo "+ $grpcurl -plaintext $addr envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus" >&2
"$grpcurl" -plaintext "$addr" envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus
