package serial_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/internal/serial"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOrderAndClose(t *testing.T) {
	s := serial.New()
	var mu sync.Mutex
	var got []int
	for i := 0; i < 100; i++ {
		s.Schedule(func() {
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		})
	}
	done := make(chan struct{})
	s.Schedule(func() { close(done) })
	<-done
	s.Close()
	for i, v := range got {
		if v != i {
			t.Fatalf("callback %d ran as %d: %v", i, v, got)
		}
	}
	if s.Schedule(func() { t.Error("ran after Close") }) {
		t.Error("Schedule after Close reported true")
	}
}

// TestCloseFromCallback: Close inside a callback returns at once; the
// goroutine ends when the callback returns.
func TestCloseFromCallback(t *testing.T) {
	s := serial.New()
	returned := make(chan bool, 1)
	s.Schedule(func() {
		returned <- s.InCallback()
		s.Close()
	})
	select {
	case in := <-returned:
		if !in {
			t.Error("InCallback is false inside a callback")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("callback did not run")
	}
	if s.InCallback() {
		t.Error("InCallback is true outside a callback")
	}
	s.Close() // from outside as well: waits for the goroutine
}

// TestCloseDropsQueued: Close drops what is queued, also the callbacks
// taken out of the queue together with the one running.
func TestCloseDropsQueued(t *testing.T) {
	s := serial.New()
	release0, release1 := make(chan struct{}), make(chan struct{})
	running1 := make(chan struct{})
	s.Schedule(func() { <-release0 })
	// Queued while the first runs, so taken out together.
	s.Schedule(func() { close(running1); <-release1 })
	for i := 0; i < 3; i++ {
		s.Schedule(func() { t.Error("callback queued before Close ran after it") })
	}
	close(release0)
	<-running1
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a callback was running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release1)
	<-closed
}
