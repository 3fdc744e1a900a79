// Package golden keeps a generated file equal to what the code makes of
// it: a test compares the two, and rewrites the file when asked.
package golden

import "os"

// TB is the part of testing.TB that Check uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
}

// Check fails t unless the file at path holds want; with update, it
// writes want there instead. how says the command that updates it.
func Check(t TB, path, want string, update bool, how string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is not what the code makes of it; run: %s\n%s:\n%s\nwanted:\n%s", path, how, path, got, want)
	}
}
