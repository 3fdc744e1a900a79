package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/xdsengine/xdsengine"

// leftOut are the packages the README's diagram and table leave out on
// purpose, beyond the module's own helpers under internal/.
var leftOut = map[string]string{
	"csds/internal/csdsdemo": "a demo program that scripts/csds-grpcurl.sh runs",
}

// box names the box of the README's diagram and row of its table that
// stand for a package of the module (its path inside the module), or ""
// for a package left out.
func box(rel string) string {
	first, _, _ := strings.Cut(rel, "/")
	switch {
	case first == "internal" || leftOut[rel] != "":
		return ""
	case rel == "engine/internal/wire", rel == "engine/storage", first == "cmd":
		return rel
	case first == "types":
		return "types/…"
	default:
		return first + "/"
	}
}

// listedPackage is what the test reads of `go list -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string // direct imports, tests left aside
	Deps       []string // every package imported, directly or not
}

// moduleImports lists the module's packages with `go list` and returns
// the boxes, the direct imports between boxes, and what each box uses
// directly or through any package, left-out ones included.
func moduleImports(t *testing.T) (boxes map[string]bool, direct, uses map[[2]string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	rel := func(path string) (string, bool) {
		r, ok := strings.CutPrefix(path, modulePath+"/")
		return r, ok
	}
	boxes, direct, uses = map[string]bool{}, map[[2]string]bool{}, map[[2]string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		r, ok := rel(p.ImportPath)
		from := box(r)
		if !ok || from == "" {
			continue
		}
		boxes[from] = true
		for _, list := range []struct {
			paths []string
			into  map[[2]string]bool
		}{{p.Imports, direct}, {p.Deps, uses}} {
			for _, path := range list.paths {
				if r, ok := rel(path); ok {
					if to := box(r); to != "" && to != from {
						list.into[[2]string{from, to}] = true
					}
				}
			}
		}
	}
	if len(boxes) == 0 {
		t.Fatal("go list listed no package of the module")
	}
	return boxes, direct, uses
}

// readmeSection returns the README's text from heading to the next
// second-level heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

var (
	diagramNode  = regexp.MustCompile(`^    (\w+)\["([^"]+)"\]$`)
	diagramArrow = regexp.MustCompile(`^    (\w+) --> (\w+)$`)
)

// readmeDiagram reads the boxes and arrows of the Architecture diagram,
// a mermaid flowchart written as one node or one arrow a line.
func readmeDiagram(t *testing.T) (boxes map[string]bool, arrows map[[2]string]bool) {
	t.Helper()
	_, block, ok := strings.Cut(readmeSection(t, "## Architecture"), "```mermaid\n")
	if !ok {
		t.Fatal("the Architecture section has no mermaid block")
	}
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	if lines[0] != "flowchart TD" {
		t.Fatalf("the diagram starts %q, want \"flowchart TD\"", lines[0])
	}
	label := map[string]string{}
	var pairs [][2]string
	for _, line := range lines[1:] {
		if m := diagramNode.FindStringSubmatch(line); m != nil {
			label[m[1]] = m[2]
		} else if m := diagramArrow.FindStringSubmatch(line); m != nil {
			pairs = append(pairs, [2]string{m[1], m[2]})
		} else {
			t.Errorf("diagram line %q is neither a box (    Id[\"package\"]) nor an arrow (    Id --> Id)", line)
		}
	}
	boxes, arrows = map[string]bool{}, map[[2]string]bool{}
	for _, l := range label {
		boxes[l] = true
	}
	for _, p := range pairs {
		from, to := label[p[0]], label[p[1]]
		if from == "" || to == "" {
			t.Errorf("arrow %s --> %s joins a box that is not declared", p[0], p[1])
			continue
		}
		arrows[[2]string{from, to}] = true
	}
	return boxes, arrows
}

// readmeTable reads the packages named in the first column of the
// Architecture section's "package | owns" table.
func readmeTable(t *testing.T) map[string]bool {
	t.Helper()
	_, table, ok := strings.Cut(readmeSection(t, "## Architecture"), "\n| package | owns |\n|---|---|\n")
	if !ok {
		t.Fatal("the Architecture section has no \"package | owns\" table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	table = strings.TrimRight(table, "\n")
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		name := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		if len(cells) < 2 || name == "" || strings.Contains(name, "`") {
			t.Errorf("table row %q does not start with one package in backquotes", line)
			continue
		}
		rows[name] = true
	}
	return rows
}

// closure is the set of pairs (a, c) joined by a path of arrows.
func closure(arrows map[[2]string]bool) map[[2]string]bool {
	reach := maps.Clone(arrows)
	for changed := true; changed; {
		changed = false
		for ab := range reach {
			for bc := range arrows {
				if ab[1] == bc[0] && ab[0] != bc[1] && !reach[[2]string{ab[0], bc[1]}] {
					reach[[2]string{ab[0], bc[1]}] = true
					changed = true
				}
			}
		}
	}
	return reach
}

func sortedKeys[K comparable](m map[K]bool, str func(K) string) []string {
	var out []string
	for k := range m {
		out = append(out, str(k))
	}
	slices.Sort(out)
	return out
}

func pairString(p [2]string) string { return p[0] + " → " + p[1] }

// TestArchitectureIsTheImports: the README's Architecture diagram and
// package table say what the imports say. Every box and every row is a
// package (or directory of them) that exists, and every package has one;
// every arrow is a direct import; and what a package uses, directly or
// not, is exactly what its arrows lead to.
func TestArchitectureIsTheImports(t *testing.T) {
	boxes, direct, uses := moduleImports(t)
	drawn, arrows := readmeDiagram(t)
	rows := readmeTable(t)

	for _, c := range []struct {
		what string
		got  map[string]bool
	}{{"diagram's boxes", drawn}, {"table's rows", rows}} {
		for b := range boxes {
			if !c.got[b] {
				t.Errorf("the README's %s lack %s", c.what, b)
			}
		}
		for b := range c.got {
			if !boxes[b] {
				t.Errorf("the README's %s have %s, which is no package of the module (or one left out)", c.what, b)
			}
		}
	}
	for a := range arrows {
		if !direct[a] {
			t.Errorf("the diagram's arrow %s is no import: no package of %s imports one of %s", pairString(a), a[0], a[1])
		}
	}
	drawnUses := closure(arrows)
	for u := range uses {
		if !drawnUses[u] {
			t.Errorf("%s uses %s, but no arrow or path of arrows leads there", u[0], u[1])
		}
	}
	for u := range drawnUses {
		if !uses[u] {
			t.Errorf("the diagram leads from %s to %s, but %s does not use %s", u[0], u[1], u[0], u[1])
		}
	}
	t.Logf("%d boxes; direct imports between them: %v", len(boxes), sortedKeys(direct, pairString))
}
