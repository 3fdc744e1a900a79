package protoscan_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const protowirePath = "google.golang.org/protobuf/encoding/protowire"

// stillImportsProtowire are the packages that may import protowire until
// they move onto protoscan, each with who moves it. An entry whose
// package no longer imports protowire fails the test, so that the list
// only shrinks.
var stillImportsProtowire = map[string]string{}

// TestOnlyProtoscanImportsProtowire: no non-generated, non-test file of
// the module imports protowire outside this package (see the package
// doc). It lists the module's packages with go list, with and without
// the build tag of the tool tests, and reads the imports of their files.
func TestOnlyProtoscanImportsProtowire(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's packages: %v", err)
	}
	self := listPackages(t, goTool, "-f", "{{.ImportPath}}", ".")[0]
	importers := make(map[string][]string) // package -> its files that import protowire
	for _, tags := range []string{"", "xdsengine_tools"} {
		for _, line := range listPackages(t, goTool, "-tags", tags, "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Imports ","}}`, "../../...") {
			parts := strings.Split(line, "|")
			pkg, dir, files, imports := parts[0], parts[1], parts[2], parts[3]
			if pkg == self || !slices.Contains(strings.Split(imports, ","), protowirePath) {
				continue
			}
			for _, name := range strings.Split(files, ",") {
				if file := filepath.Join(dir, name); importsProtowire(t, file) && !slices.Contains(importers[pkg], file) {
					importers[pkg] = append(importers[pkg], file)
				}
			}
		}
	}
	for pkg, files := range importers {
		if _, allowed := stillImportsProtowire[pkg]; !allowed && len(files) > 0 {
			t.Errorf("%s imports protowire (%s): read the wire format with %s instead", pkg, strings.Join(files, ", "), self)
		}
	}
	for pkg, who := range stillImportsProtowire {
		if len(importers[pkg]) == 0 {
			t.Errorf("%s no longer imports protowire: remove it from stillImportsProtowire (%s)", pkg, who)
		}
	}
}

// listPackages runs go list with args and returns its lines.
func listPackages(t *testing.T, goTool string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// importsProtowire reports whether the file, not generated, imports
// protowire.
func importsProtowire(t *testing.T, file string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if ast.IsGenerated(f) {
		return false
	}
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == protowirePath {
			return true
		}
	}
	return false
}
