package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// Bounds on a NACK's error_detail: a response of 100,000 invalid resources,
// or one with megabyte names, must not produce a request the server
// refuses to read.
const (
	maxListedFailures = 100
	maxFailureBytes   = 1024
	maxNameBytes      = 256
)

// tally collects the failures of one response, for its NACK.
type tally struct {
	failures []string
	omitted  int // failures beyond maxListedFailures
	invalid  int // failures and TP3 errors (A78 counts both)
}

func (t *tally) fail(format string, args ...any) {
	t.invalid++
	if len(t.failures) >= maxListedFailures {
		t.omitted++
		return
	}
	t.failures = append(t.failures, truncateUTF8(fmt.Sprintf(format, args...), maxFailureBytes))
}

// nackDetail is the error_detail of the NACK, or nil for an ACK.
func (t *tally) nackDetail() *rpcstatus.Status {
	if len(t.failures) == 0 {
		return nil
	}
	msg := "xDS response validation errors: [" + strings.Join(t.failures, "; ")
	if t.omitted > 0 {
		msg += fmt.Sprintf("; and %d more", t.omitted)
	}
	msg += "]"
	return nackStatus(msg)
}

// nackStatus is an error_detail. Its message is a proto string: it must
// be valid UTF-8 or the request cannot be marshalled at all.
func nackStatus(msg string) *rpcstatus.Status {
	return &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: strings.ToValidUTF8(msg, "\uFFFD")}
}

// QuoteName quotes a resource name for a NACK or a log: escaped, so that
// invalid UTF-8 stays printable, and shortened when huge.
func QuoteName(name string) string {
	if len(name) <= maxNameBytes {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q… (%d bytes)", truncateUTF8(name, maxNameBytes), len(name))
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
