package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/types/builtin"
)

const storeUsage = `Usage: xdsctl store PATH

Lists what a last-known-good store holds (the file an engine keeps with
engine.Config.Store and package lastgood), without a server: a line on
the store, then one per resource with its type, name, version, age (how
long ago the engine received it) and the server that sent it:

  store PATH: format 2, digest 3f2a9c1e4b5d0a17…, 2 resources, 0 corrupt
  TYPE      NAME        VERSION  AGE    SERVER
  Cluster   cluster-a   7        2m13s  xds.example.com:443
  Listener  listener-a  3        2m13s  xds.example.com:443

The digest, of the node and the bootstrap the store was written for, is
shown by its first 8 bytes; an engine uses the store only if its own
matches. Corrupt counts the resources that did not check out and are
left out.

The store is read without taking its lock, so this neither waits for a
running engine nor blocks it: the engine appends whole change sets or
replaces the file by rename, and a change set it is still writing is
left out. Nothing is written: a store that cannot be read is reported,
not moved aside.

Examples:
  xdsctl store /var/lib/myapp/xds/lastgood

Exit status: 0 listed, 1 failure (no store, unreadable), 2 usage error.
`

func runStore(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.name)
	pos, code, done := parseCommandLine(c, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		return fail(c, stderr, usageErrorf("want exactly one PATH, got %d argument(s)", len(pos)))
	}
	path := pos[0]
	s, err := lastgood.Open(path, lastgood.Options{ReadOnly: true})
	if err != nil {
		return fail(c, stderr, err)
	}
	defer s.Close()
	digest := s.Digest()
	l, err := s.Load(digest)
	if err != nil {
		return fail(c, stderr, err)
	}
	if _, err := io.WriteString(stdout, storeListing(path, digest, l, time.Now())); err != nil {
		return fail(c, stderr, err)
	}
	return exitOK
}

// storeListing prints a store's content, sorted by type, name and
// authority.
func storeListing(path string, digest []byte, l storage.Loaded, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "store %s: format %d, digest %s, %d resource%s, %d corrupt\n",
		path, lastgood.FormatVersion, shortDigest(digest), len(l.Resources), plural(len(l.Resources)), l.Corrupt)
	if len(l.Resources) == 0 {
		return b.String()
	}
	reg := builtin.Registry()
	rs := slices.Clone(l.Resources)
	slices.SortFunc(rs, func(a, b storage.Resource) int {
		return cmp.Or(cmp.Compare(reg.ShortName(a.TypeURL), reg.ShortName(b.TypeURL)), cmp.Compare(a.TypeURL, b.TypeURL),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Authority, b.Authority))
	})
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tNAME\tVERSION\tAGE\tSERVER")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(reg.ShortName(r.TypeURL)), cell(r.Name), cell(r.Version), age(now, r.Received), cell(r.Server))
	}
	tw.Flush()
	return b.String()
}

func shortDigest(d []byte) string {
	switch {
	case len(d) == 0:
		return "none"
	case len(d) <= 8:
		return hex.EncodeToString(d)
	}
	return hex.EncodeToString(d[:8]) + "…"
}

// age is how long ago t was, to the second; "-" for no time.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Truncate(time.Second).String()
}

// cell is a table cell: "-" for nothing, and quoted when it holds a
// space or a character that is not printable, so that one line stays one
// resource and the columns hold.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
