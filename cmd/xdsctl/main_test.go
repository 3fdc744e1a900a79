package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the writes of run's goroutines
// and the reads of the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const testNodeID = "xdsctl-test"

// bootstrapJSON points at addr with insecure credentials and knows the
// authority of the LEDS collection names the tests use.
func bootstrapJSON(addr string) string {
	return fmt.Sprintf(`{
  "xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
  "node": {"id": %q},
  "authorities": {"endpoints.example": {}}
}`, addr, testNodeID)
}

func writeBootstrap(t *testing.T, addr string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, []byte(bootstrapJSON(addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is what one run returned.
type result struct {
	code           int
	stdout, stderr string
}

// runSync runs the command to the end.
func runSync(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	code := run(context.Background(), args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// background is a run in a goroutine, for watch, which runs until its
// context is cancelled.
type background struct {
	cancel         context.CancelFunc
	done           chan int
	stdout, stderr syncBuffer
}

func runBackground(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1)}
	go func() { b.done <- run(ctx, args, &b.stdout, &b.stderr) }()
	// If the test fails half way, still end the run before goleak looks.
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			t.Error("run did not return within 10s of its context's end")
		}
	})
	return b
}

// stop ends the run as SIGINT would and returns its exit status.
func (b *background) stop(t *testing.T) int {
	t.Helper()
	b.cancel()
	select {
	case code := <-b.done:
		b.done <- code // for the cleanup
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of its context's end")
		return -1
	}
}

// waitFor waits until the buffer holds every one of want, in order,
// after the offset from, and returns the offset just past the last one.
func waitFor(t *testing.T, buf *syncBuffer, from int, want ...string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := buf.String()
		at, ok := from, true
		for _, w := range want {
			i := strings.Index(s[at:], w)
			if i < 0 {
				ok = false
				break
			}
			at += i + len(w)
		}
		if ok {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("output after offset %d does not contain %q in order within 10s; output:\n%s", from, want, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
