package validation

import "strings"

// TypeName returns the fully qualified message name of an Any type URL:
// the part after the last '/'. Any treats everything before it as an
// opaque host, so comparisons must ignore it.
func TypeName(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}
