#!/usr/bin/env bash
# The structural checks of the core's design (issue 40), run by .ci/run:
# fairness comes from who owns what, not from yielding; files stay
# readable. The seam
# between engine and engine/internal/wire is checked by a test of its own
# (engine/internal/wire, TestSeamIsNarrow), and the one package that reads
# protobuf's wire format by internal/protoscan's.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0

sources=$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
nontest=$(printf '%s\n' $sources | grep -v '_test\.go$')

if grep -n 'runtime\.Gosched' $nontest; then
	echo "runtime.Gosched in non-test code: a Watch must not need the scheduler's help (issue 40)"
	fail=1
fi
if grep -nE '\.callers\b|callers +atomic' engine/*.go | grep -v '_test\.go:'; then
	echo "engine counts its callers again: a Watch is queued, it does not wait for the lock"
	fail=1
fi

max=450
for f in $nontest; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$max" ]; then
		echo "$f: $n lines, more than $max"
		fail=1
	fi
done

# The 3,000-line limit on engine/*.go is withdrawn: a line count is a
# signal, not a goal, and a file split to pass one reads worse.

if [ "$fail" -ne 0 ]; then
	exit 1
fi
echo "structure: ok"
