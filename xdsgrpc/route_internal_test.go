package xdsgrpc

import (
	"context"
	"hash/fnv"
	"math/bits"
	"regexp"
	"strconv"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/types/rds"
)

func fnvHash(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return f.Sum64()
}

// TestRequestHash: the hash a route's policies give an RPC (gRFC A42):
// one header policy hands ring_hash the header's value itself, several
// combine as gRPC combines them, a terminal policy that produced a hash
// ends the list, and an RPC no policy hashes gets none.
func TestRequestHash(t *testing.T) {
	header := func(name string) hashPolicy {
		return hashPolicy{HashPolicy: rds.HashPolicy{Kind: rds.HashPolicyHeader, HeaderName: name}}
	}
	terminal := func(p hashPolicy) hashPolicy { p.Terminal = true; return p }
	rewrite := header("x-user")
	rewrite.re = regexp.MustCompile(`-\d+$`)
	rewrite.RegexRewrite = &rds.RegexRewrite{Pattern: `-\d+$`, Substitution: ""}
	channel := hashPolicy{HashPolicy: rds.HashPolicy{Kind: rds.HashPolicyChannelID}}
	combine := func(hs ...uint64) string {
		var h uint64
		for _, x := range hs {
			h = bits.RotateLeft64(h, 1) ^ x
		}
		return strconv.FormatUint(h, 10)
	}
	cases := []struct {
		name     string
		policies []hashPolicy
		md       []string
		want     string
	}{
		{"no policy", nil, []string{"x-user", "alice"}, ""},
		{"one header: its value", []hashPolicy{header("x-user")}, []string{"x-user", "alice"}, "alice"},
		{"one header, values joined", []hashPolicy{header("x-user")}, []string{"x-user", "a", "x-user", "b"}, "a,b"},
		{"one header, absent", []hashPolicy{header("x-user")}, nil, ""},
		{"one header, rewritten", []hashPolicy{rewrite}, []string{"x-user", "alice-42"}, "alice"},
		{"binary header never hashes", []hashPolicy{header("x-id-bin"), header("x-user")}, []string{"x-id-bin", "\x01", "x-user", "bob"}, combine(fnvHash("bob"))},
		{"channel ID", []hashPolicy{channel}, nil, combine(7)},
		{"two headers combined", []hashPolicy{header("x-a"), header("x-b")}, []string{"x-a", "1", "x-b", "2"}, combine(fnvHash("1"), fnvHash("2"))},
		{"terminal with a hash ends the list", []hashPolicy{terminal(header("x-a")), header("x-b")}, []string{"x-a", "1", "x-b", "2"}, combine(fnvHash("1"))},
		{"terminal without a hash does not", []hashPolicy{terminal(header("x-a")), header("x-b")}, []string{"x-b", "2"}, combine(fnvHash("2"))},
		{"no policy hashes", []hashPolicy{header("x-a"), header("x-b")}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if c.md != nil {
				ctx = metadata.AppendToOutgoingContext(ctx, c.md...)
			}
			if got := requestHash(c.policies, ctx, 7); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestPickWeighted: n picks of the golden-ratio sequence give each
// cluster its weight's share of n within a few picks, for any weights.
func TestPickWeighted(t *testing.T) {
	cases := [][]uint32{{80, 20}, {1, 1, 1}, {0, 5}, {999, 1}, {3, 0, 7, 90}}
	for _, weights := range cases {
		cum := cumulative(weights)
		var total uint64
		for _, w := range weights {
			total += uint64(w)
		}
		const n = 10_000
		counts := make([]int, len(weights))
		var x uint64
		for range n {
			x += golden
			counts[pickWeighted(cum, x)]++
		}
		for i, w := range weights {
			want := float64(n) * float64(w) / float64(total)
			if d := float64(counts[i]) - want; d > 3 || d < -3 {
				t.Errorf("weights %v: entry %d got %d of %d picks, want %.0f", weights, i, counts[i], n, want)
			}
		}
	}
	if cumulative([]uint32{0, 0}) != nil {
		t.Error("weights summing to 0 must give no cumulative weights")
	}
}

// TestRPCError: an RPC never fails with a code gRFC A54 reserves for the
// control plane; the message keeps the engine's code.
func TestRPCError(t *testing.T) {
	cases := []struct {
		in   error
		want codes.Code
	}{
		{status.Error(codes.NotFound, "gone"), codes.Unavailable},
		{status.Error(codes.InvalidArgument, "bad"), codes.Unavailable},
		{status.Error(codes.FailedPrecondition, "cycle"), codes.Unavailable},
		{status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
		{status.Error(codes.Unavailable, "down"), codes.Unavailable},
		{status.Error(codes.ResourceExhausted, "big"), codes.ResourceExhausted},
	}
	for _, c := range cases {
		got := rpcError(c.in)
		if status.Code(got) != c.want || !regexp.MustCompile(regexp.QuoteMeta(status.Convert(c.in).Message())).MatchString(got.Error()) {
			t.Errorf("rpcError(%v) = %v, want code %v and the message", c.in, got, c.want)
		}
	}
}

// valuePicker is a picker whose values == cannot compare.
type valuePicker struct{ results []balancer.PickResult }

func (p valuePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	if len(p.results) == 0 {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return p.results[0], nil
}

// TestSamePicker: pickers of a program's own may be values that == cannot
// compare; they are different pickers, not a panic.
func TestSamePicker(t *testing.T) {
	p := &leafPicker{}
	cases := []struct {
		a, b balancer.Picker
		want bool
	}{
		{p, p, true},
		{p, &leafPicker{}, false},
		{nil, nil, true},
		{p, nil, false},
		{valuePicker{}, valuePicker{}, false},
		{valuePicker{}, p, false},
	}
	for i, c := range cases {
		if got := samePicker(c.a, c.b); got != c.want {
			t.Errorf("case %d: samePicker = %v, want %v", i, got, c.want)
		}
	}
}
