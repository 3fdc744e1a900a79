package main

import "github.com/xdsengine/xdsengine/types/cds"

// kindName names a string matcher's kind for printing.
func kindName(k cds.MatchKind) string {
	switch k {
	case cds.MatchExact:
		return "is"
	case cds.MatchPrefix:
		return "starts with"
	case cds.MatchSuffix:
		return "ends with"
	case cds.MatchContains:
		return "contains"
	case cds.MatchSafeRegex:
		return "matches"
	}
	return "?"
}
