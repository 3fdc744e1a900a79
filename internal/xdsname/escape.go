package xdsname

import (
	"fmt"
	"strings"
)

// component says where in a URI a string goes, which decides the bytes
// that may stay unencoded there.
type component int

const (
	// inAuthority: RFC 3986 reg-name (unreserved, sub-delims) plus ':'
	// for ports and '[' ']' for IPv6 literals. '@' is encoded so that no
	// reader takes the front of the authority for userinfo.
	inAuthority component = iota
	// inSegment: one path segment, RFC 3986 pchar (unreserved,
	// sub-delims, ':', '@'). Used for the type, which has no '/'.
	inSegment
	// inPath: pchar plus '/', for the id, which may span segments.
	inPath
	// inQuery: a context param key or value. '&' and '=' delimit pairs;
	// '+' reads as a space to form decoders; ';' is a separator to some
	// (Go's url.ParseQuery rejects a raw one), so all four are encoded.
	inQuery
)

// kept[where][c] is keep(c, where), looked up rather than worked out:
// every byte of every name a watch or a response carries is checked.
var kept = func() (t [inQuery + 1][256]bool) {
	for where := range t {
		for c := range t[where] {
			t[where][c] = keep(byte(c), component(where))
		}
	}
	return t
}()

// keep reports whether c may appear unencoded in component where.
func keep(c byte, where component) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~': // unreserved
		return true
	case '!', '$', '\'', '(', ')', '*', ',': // sub-delims safe everywhere
		return true
	case '&', '=', '+', ';': // the other sub-delims
		return where != inQuery
	case ':':
		return true
	case '@':
		return where != inAuthority
	case '[', ']':
		return where == inAuthority
	case '/':
		return where == inPath || where == inQuery
	case '?':
		return where == inQuery
	}
	return false
}

const upperHex = "0123456789ABCDEF"

// escapeTo writes s to b, percent-encoding every byte not kept in where.
// The runs of kept bytes between encoded ones are written whole.
func escapeTo(b *strings.Builder, s string, where component) {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if kept[where][c] {
			continue
		}
		b.WriteString(s[start:i])
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xf])
		start = i + 1
	}
	b.WriteString(s[start:])
}

// unescape decodes %XX sequences. Nothing else is special: '+' stays '+'.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			end := min(i+3, len(s))
			return "", fmt.Errorf("invalid percent-encoding %q", s[i:end])
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
