package rds

import "strings"

// domainMatchType ranks domain patterns: a better type wins regardless of
// length (gRFC A28, "most specifically matches").
type domainMatchType int

const (
	domainMatchInvalid domainMatchType = iota
	domainMatchUniversal
	domainMatchPrefix
	domainMatchSuffix
	domainMatchExact
)

// domainMatchTypeOf classifies a pattern the way grpc-go and gRPC C-core
// do: a '*' anywhere other than the first or last byte is invalid, and a
// pattern that starts with '*' is a suffix pattern whatever follows.
func domainMatchTypeOf(pattern string) domainMatchType {
	switch {
	case pattern == "":
		return domainMatchInvalid
	case pattern == "*":
		return domainMatchUniversal
	case pattern[0] == '*':
		return domainMatchSuffix
	case pattern[len(pattern)-1] == '*':
		return domainMatchPrefix
	case strings.Contains(pattern, "*"):
		return domainMatchInvalid
	}
	return domainMatchExact
}

// FindVirtualHost returns the virtual host whose domains best match host,
// or nil when none does. host is compared as given, port included, the
// way gRPC compares a channel's target authority: "example.com:443"
// matches the pattern "example.com:443" or "example.com:*" but not
// "example.com".
//
// An exact pattern beats a suffix pattern ("*.example.com"), which beats
// a prefix pattern ("example.*"), which beats "*"; among patterns of one
// kind the longest wins, and among equal patterns the first virtual host.
// Comparison ignores ASCII case, and a wildcard stands for at least one
// character, as in gRPC C-core and Envoy.
func (rc *RouteConfiguration) FindVirtualHost(host string) *VirtualHost {
	var (
		best     *VirtualHost
		bestType = domainMatchInvalid
		bestLen  int
	)
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		for _, pattern := range vh.Domains {
			t := domainMatchTypeOf(pattern)
			if t == domainMatchInvalid || t < bestType || t == bestType && len(pattern) <= bestLen {
				continue
			}
			if !domainMatches(t, pattern, host) {
				continue
			}
			best, bestType, bestLen = vh, t, len(pattern)
		}
	}
	return best
}

func domainMatches(t domainMatchType, pattern, host string) bool {
	switch t {
	case domainMatchExact:
		return equalFoldASCII(pattern, host)
	case domainMatchSuffix:
		return len(host) >= len(pattern) && equalFoldASCII(pattern[1:], host[len(host)-len(pattern)+1:])
	case domainMatchPrefix:
		return len(host) >= len(pattern) && equalFoldASCII(pattern[:len(pattern)-1], host[:len(pattern)-1])
	case domainMatchUniversal:
		return true
	}
	return false
}

// equalFoldASCII compares ignoring ASCII case only. Host names are ASCII
// (IDNs travel as punycode), and Unicode folding could equate strings of
// different byte lengths, which the slicing above assumes away.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
