package xdsgrpc

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/metadata"

	"github.com/xdsengine/xdsengine/types/rds"
)

// route is one route of the channel's virtual host, compiled for the
// picker: the first route whose matchers all hold takes the RPC (gRFC A28).
type route struct {
	name     string
	path     pathMatcher
	headers  []headerMatcher
	fraction *uint32 // parts per million; nil: always considered
	// action
	kind     rds.ActionKind
	err      error    // the RPC's error when the route does not forward
	clusters []int    // indexes into channelConfig.clusters
	cum      []uint64 // cumulative weights of clusters; nil for one cluster
	seq      *atomic.Uint64
	hash     []hashPolicy
	// filters run for this route's RPCs, one chain per entry of clusters
	// (weighted clusters may override filter configs each); nil when the
	// channel has no filters of the program's own.
	filters []*filterChain
}

// match reports whether the route takes an RPC to method; md is read
// from ctx only when a header matcher needs it, and then kept for the
// routes after.
func (r *route) match(method string, ctx context.Context, md *metadata.MD, mdRead *bool) bool {
	if !r.path.match(method) {
		return false
	}
	if len(r.headers) > 0 {
		if !*mdRead {
			*md, _ = metadata.FromOutgoingContext(ctx)
			*mdRead = true
		}
		for i := range r.headers {
			if !r.headers[i].match(*md) {
				return false
			}
		}
	}
	// Drawn last, as gRPC does, so an RPC that the path or headers rule
	// out takes no draw.
	return r.fraction == nil || rand.Uint32N(1_000_000) < *r.fraction
}

// golden is 2^64/φ: adding it each pick walks the unit interval in the
// Weyl sequence of the golden ratio, which spreads n picks over the
// weights within a few of exact for any n. gRPC draws at random, which
// strays by ±1.3 % over 1,000 RPCs of an 80/20 split.
const golden = 0x9E3779B97F4A7C15

// pick returns the index (into the route's clusters) of the cluster for
// one RPC: by weight when the route splits.
func (r *route) pick() int {
	if r.cum == nil {
		return 0
	}
	return pickWeighted(r.cum, r.seq.Add(golden))
}

// pickWeighted maps the point x of the unit interval (as a 64-bit
// fraction) onto the cumulative weights cum.
func pickWeighted(cum []uint64, x uint64) int {
	target, _ := bits.Mul64(x, cum[len(cum)-1])
	// Few entries: a scan beats a binary search.
	for i, c := range cum {
		if target < c {
			return i
		}
	}
	return len(cum) - 1
}

// cumulative returns the running sums of weights, or nil when they sum
// to zero.
func cumulative(weights []uint32) []uint64 {
	cum := make([]uint64, len(weights))
	var total uint64
	for i, w := range weights {
		total += uint64(w)
		cum[i] = total
	}
	if total == 0 {
		return nil
	}
	return cum
}

// pathMatcher is a route's path specifier (gRFC A28).
type pathMatcher struct {
	kind       rds.PathMatchKind
	pattern    string
	ignoreCase bool
	re         *regexp.Regexp
}

func (m *pathMatcher) match(path string) bool {
	switch m.kind {
	case rds.PathMatchPrefix:
		if m.ignoreCase {
			return len(path) >= len(m.pattern) && strings.EqualFold(path[:len(m.pattern)], m.pattern)
		}
		return strings.HasPrefix(path, m.pattern)
	case rds.PathMatchExact:
		if m.ignoreCase {
			return strings.EqualFold(path, m.pattern)
		}
		return path == m.pattern
	case rds.PathMatchRegex:
		return m.re.MatchString(path)
	}
	return false
}

// headerMatcher is one header matcher of a route, judged as grpc-go
// judges it: an absent header fails every matcher but "present", whatever
// its invert.
type headerMatcher struct {
	rds.HeaderMatcher
	re *regexp.Regexp
}

func (m *headerMatcher) match(md metadata.MD) bool {
	v, ok := headerValue(md, m.Name)
	if m.Kind == rds.HeaderMatchPresent {
		return ok == (m.Present != m.Invert)
	}
	if !ok {
		return false
	}
	var hit bool
	switch m.Kind {
	case rds.HeaderMatchExact:
		hit = v == m.Value || m.IgnoreCase && strings.EqualFold(v, m.Value)
	case rds.HeaderMatchPrefix:
		hit = len(v) >= len(m.Value) && equal(v[:len(m.Value)], m.Value, m.IgnoreCase)
	case rds.HeaderMatchSuffix:
		hit = len(v) >= len(m.Value) && equal(v[len(v)-len(m.Value):], m.Value, m.IgnoreCase)
	case rds.HeaderMatchContains:
		hit = contains(v, m.Value, m.IgnoreCase)
	case rds.HeaderMatchRegex:
		hit = m.re.MatchString(v)
	case rds.HeaderMatchRange:
		n, err := strconv.ParseInt(v, 10, 64)
		hit = err == nil && n >= m.RangeStart && n < m.RangeEnd
	}
	return hit != m.Invert
}

func equal(a, b string, fold bool) bool {
	if fold {
		return strings.EqualFold(a, b)
	}
	return a == b
}

func contains(s, sub string, fold bool) bool {
	if !fold {
		return strings.Contains(s, sub)
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// headerValue is a header as a route sees it (gRFC A28): the values of
// the RPC's metadata joined by commas; binary headers are never present;
// content-type, which grpc-go adds below the picker, is application/grpc.
func headerValue(md metadata.MD, name string) (string, bool) {
	if strings.HasSuffix(name, "-bin") {
		return "", false
	}
	vs := md[name]
	switch len(vs) {
	case 0:
		if name == "content-type" {
			return "application/grpc", true
		}
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// hashPolicy is one hash policy of a route (gRFC A42).
type hashPolicy struct {
	rds.HashPolicy
	re *regexp.Regexp
}

// requestHash is the value a ring_hash cluster hashes for an RPC
// (gRFC A42), which the picker hands grpc-go's ring_hash as its
// request_hash_header (gRFC A76): with one header policy, the header's
// value itself, so that ring_hash's xxhash of it is the hash gRPC's own
// config selector computes and both clients pick the same endpoint; with
// several policies, their hashes combined as gRPC combines them, written
// in decimal. "" means no policy produced a hash: ring_hash then picks at
// random, as A76 says for a missing header.
func requestHash(policies []hashPolicy, ctx context.Context, channelID uint64) string {
	if len(policies) == 0 {
		return ""
	}
	var md metadata.MD
	mdRead := false
	value := func(p *hashPolicy) (string, bool) {
		if !mdRead {
			md, _ = metadata.FromOutgoingContext(ctx)
			mdRead = true
		}
		v, ok := headerValue(md, p.HeaderName)
		if ok && p.re != nil {
			v = p.re.ReplaceAllString(v, p.RegexRewrite.Substitution)
		}
		return v, ok
	}
	if len(policies) == 1 && policies[0].Kind == rds.HashPolicyHeader {
		v, _ := value(&policies[0])
		return v
	}
	var h uint64
	generated := false
	for i := range policies {
		p := &policies[i]
		var ph uint64
		switch p.Kind {
		case rds.HashPolicyHeader:
			v, ok := value(p)
			if !ok {
				continue
			}
			f := fnv.New64a()
			f.Write([]byte(v))
			ph = f.Sum64()
		case rds.HashPolicyChannelID:
			ph = channelID
		default:
			continue
		}
		h = bits.RotateLeft64(h, 1) ^ ph
		generated = true
		if p.Terminal {
			break
		}
	}
	if !generated {
		return ""
	}
	return strconv.FormatUint(h, 10)
}

// compileRoute compiles one decoded route. Index is its position among
// the virtual host's routes, for error messages.
func compileRoute(r *rds.Route, index int, clusterIndex func(string) int) (route, error) {
	out := route{name: r.Name, kind: r.Action.Kind, fraction: r.Match.FractionPerMillion}
	if out.name == "" {
		out.name = "#" + strconv.Itoa(index)
	}
	pm := r.Match.Path
	out.path = pathMatcher{kind: pm.Kind, pattern: pm.Pattern, ignoreCase: pm.IgnoreCase}
	if pm.Kind == rds.PathMatchRegex {
		re, err := regexp.Compile("^(?:" + pm.Pattern + ")$")
		if err != nil {
			return route{}, fmt.Errorf("route %s: path regex: %w", out.name, err)
		}
		out.path.re = re
	}
	for _, h := range r.Match.Headers {
		hm := headerMatcher{HeaderMatcher: h}
		if h.Kind == rds.HeaderMatchRegex {
			re, err := regexp.Compile("^(?:" + h.Value + ")$")
			if err != nil {
				return route{}, fmt.Errorf("route %s: header %q regex: %w", out.name, h.Name, err)
			}
			hm.re = re
		}
		out.headers = append(out.headers, hm)
	}
	switch r.Action.Kind {
	case rds.ActionCluster:
		out.clusters = []int{clusterIndex(r.Action.Cluster)}
	case rds.ActionWeightedClusters:
		weights := make([]uint32, 0, len(r.Action.WeightedClusters))
		for _, wc := range r.Action.WeightedClusters {
			ci := -1 // never picked: the channel does not watch it
			if wc.Weight > 0 {
				ci = clusterIndex(wc.Name)
			}
			out.clusters = append(out.clusters, ci)
			weights = append(weights, wc.Weight)
		}
		out.cum = cumulative(weights)
		out.seq = new(atomic.Uint64)
		if out.cum == nil {
			out.kind, out.err = rds.ActionUnsupported, fmt.Errorf("route %s: every weighted cluster has weight 0", out.name)
		} else if len(out.clusters) == 1 {
			out.cum = nil
		}
	case rds.ActionNonForwarding:
		out.err = fmt.Errorf("route %s: its action is non_forwarding_action, which only servers use", out.name)
	case rds.ActionClusterSpecifierPlugin:
		out.err = fmt.Errorf("route %s: cluster specifier plugin %q: cluster specifier plugins are not supported", out.name, r.Action.ClusterSpecifierPlugin)
	default:
		out.err = fmt.Errorf("route %s: its action does not route to a cluster", out.name)
	}
	for _, hp := range r.Action.HashPolicies {
		p := hashPolicy{HashPolicy: hp}
		if hp.RegexRewrite != nil {
			re, err := regexp.Compile(hp.RegexRewrite.Pattern)
			if err != nil {
				return route{}, fmt.Errorf("route %s: hash policy regex: %w", out.name, err)
			}
			p.re = re
		}
		out.hash = append(out.hash, p)
	}
	return out, nil
}

// clustersOf returns the clusters a virtual host routes to, each once,
// in route order: what the channel needs (gRFC A74).
func clustersOf(vh *rds.VirtualHost) []string {
	if vh == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, r := range vh.Routes {
		switch r.Action.Kind {
		case rds.ActionCluster:
			add(r.Action.Cluster)
		case rds.ActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				if wc.Weight > 0 {
					add(wc.Name)
				}
			}
		}
	}
	return out
}
