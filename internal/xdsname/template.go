package xdsname

import (
	"net/url"
	"strings"
)

// ExpandTemplate fills a listener resource name template from the
// bootstrap (client_default_listener_resource_name_template, an
// authority's client_listener_resource_name_template, or
// server_listener_resource_name_template): every "%s" becomes target. A
// template without "%s" is returned as is.
//
// When the template starts with "xdstp:", gRFC A47 has the target
// percent-encoded so that it only holds characters allowed in a URI path,
// '/' included. The encoding is grpc-go's (bootstrap.PopulateResourceTemplate):
// the target is split at '/', each piece is encoded with Go's
// url.PathEscape, and the pieces are joined with '/' again. So
// "[::1]:8080" becomes "%5B::1%5D:8080" and "a/b c" becomes "a/b%20c".
// url.PathEscape also encodes some characters RFC 3986 allows in a
// segment (! ' ( ) * , ;); encoded or not, they decode to the same
// name, so [Canonical] makes both spellings equal.
// Old-style templates take the target verbatim.
func ExpandTemplate(template, target string) string {
	if !strings.Contains(template, "%s") {
		return template
	}
	if strings.HasPrefix(template, schemePrefix) {
		target = encodeTarget(target)
	}
	return strings.ReplaceAll(template, "%s", target)
}

// encodeTarget percent-encodes each '/'-separated piece of t.
func encodeTarget(t string) string {
	pieces := strings.Split(t, "/")
	for i, p := range pieces {
		pieces[i] = url.PathEscape(p)
	}
	return strings.Join(pieces, "/")
}
