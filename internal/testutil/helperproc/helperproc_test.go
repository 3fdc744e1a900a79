package helperproc_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/internal/testutil/helperproc"
)

const childEnv = "XDSENGINE_HELPERPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		err := helperproc.Serve(os.Stdin, os.Stdout, []string{"ready", fmt.Sprint(os.Getpid())}, func(f []string) (string, error) {
			switch f[0] {
			case "echo":
				return strings.Join(f[1:], " "), nil
			case "fail":
				return "", errors.New("failed\nas asked")
			}
			return "", fmt.Errorf("unknown command %q", f[0])
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestStartDoClose(t *testing.T) {
	p, ready, err := helperproc.Start(childEnv + "=1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(ready) != 2 || ready[0] != "ready" || ready[1] == fmt.Sprint(os.Getpid()) {
		t.Errorf("ready = %q, want \"ready\" and the child's own process ID", ready)
	}
	for _, tc := range []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{args: []string{"echo", "a", "b"}, want: []string{"a", "b"}},
		{args: []string{"echo"}, want: []string{}},
		{args: []string{"fail"}, wantErr: "error: failed as asked"},
		{args: []string{"nonsense"}, wantErr: `error: unknown command "nonsense"`},
		{args: []string{""}, wantErr: "error: empty command"},
	} {
		got, err := p.Do(tc.args...)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Do(%q) = %q, %v; want an error with %q", tc.args, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("Do(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	p.Close()
	p.Close() // a second Close is harmless
	if _, err := p.Do("echo"); err == nil {
		t.Error("Do after Close succeeded")
	}
}
