package lastgood

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// The child processes: TestMain runs runChild instead of the tests when
// childEnv is set.
const (
	childPath    = "LASTGOOD_TEST_PATH"
	childFrom    = "LASTGOOD_TEST_FROM"
	childTimeout = "LASTGOOD_TEST_TIMEOUT"
)

func runChild(what string) int {
	path := os.Getenv(childPath)
	switch what {
	case "writer":
		from, err := strconv.Atoi(os.Getenv(childFrom))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return childWriter(path, from)
	case "lock":
		return childLock(path)
	case "reader":
		return childReader(path)
	case "model":
		return childModel()
	}
	fmt.Fprintf(os.Stderr, "unknown child %q\n", what)
	return 2
}

// crashKeys is how many resources the crash test's store holds at most.
const crashKeys = 64

// crashSet is change set g of the crash test: it changes a quarter of
// the resources, putting most and deleting some, so that what the store
// holds after change set g depends on g alone (crashState). Resources
// are up to 64 KiB, so that a change set is long to write.
func crashSet(g int) []storage.Change {
	var set []storage.Change
	for i := g % 4; i < crashKeys; i += 4 {
		if (i/4+g)%5 == 0 {
			set = append(set, clusterDelete(i))
			continue
		}
		set = append(set, storage.Change{Resource: crashResource(i, g)})
	}
	return set
}

func crashResource(i, g int) storage.Resource {
	raw := make([]byte, 1000+(i*g*7919)%(64<<10))
	for j := 0; j+16 <= len(raw); j += 16 {
		binary.LittleEndian.PutUint64(raw[j:], uint64(i))
		binary.LittleEndian.PutUint64(raw[j+8:], uint64(g))
	}
	return storage.Resource{
		Server: testServer, TypeURL: clusterType, Name: fmt.Sprintf("cluster-%05d", i),
		Version: strconv.Itoa(g), Raw: raw, Received: received.Add(time.Duration(g) * time.Second),
	}
}

// crashState is what the store holds after change set g.
func crashState(g int) []storage.Resource {
	var out []storage.Resource
	for i := range crashKeys {
		last := g - ((g-i%4)%4+4)%4 // the last change set that changed i
		if last < 1 || (i/4+last)%5 == 0 {
			continue
		}
		out = append(out, crashResource(i, last))
	}
	return out
}

// childWriter applies change sets from+1, from+2, ... for ever, printing
// the number of each once Apply returned.
func childWriter(path string, from int) int {
	s, err := Open(path, Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("open")
	for g := from + 1; ; g++ {
		if err := s.Apply(testDigest, crashSet(g)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(g)
	}
}

// TestKilledWhileWriting kills a process that writes change sets, at
// random moments, again and again; each time the store loads the whole
// state after the last change set written, or after the one being
// written, and never anything else.
func TestKilledWhileWriting(t *testing.T) {
	path := storePath(t)
	const rounds = 20
	var acked, inFlight, cutShort, tempLeft int
	g := 0 // the state the store holds
	for round := range rounds {
		cmd, lines, stderr := startChild(t, nil, childEnv+"=writer", childPath+"="+path, childFrom+"="+strconv.Itoa(g))
		var err error
		if l, ok := <-lines; !ok || l != "open" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the child did not open the store: %q\n%s", round, l, stderr.String())
		}
		// Let it write for a while, then kill it once it has written a
		// change set (but in the first round, when it may have written
		// none).
		kill := time.After(time.Duration(rand.IntN(60)) * time.Millisecond)
		killDue := false
		last := g
		for !killDue || (round > 0 && last == g) {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("round %d: the child stopped: %s", round, stderr.String())
				}
				if last, err = strconv.Atoi(l); err != nil {
					t.Fatalf("round %d: the child said %q", round, l)
				}
			case <-kill:
				killDue, kill = true, nil
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for l := range lines {
			if last, err = strconv.Atoi(l); err != nil {
				t.Fatalf("round %d: the child said %q", round, l)
			}
		}
		cmd.Wait()

		// How the child was stopped, as the file tells.
		if temps, _ := filepath.Glob(path + ".tmp-*"); len(temps) > 0 {
			tempLeft++
		}
		if sc, err := scan(readFile(t, path)); err == nil && sc.end < int64(len(readFile(t, path))) {
			cutShort++
		}

		s, err := Open(path, Options{LockTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("round %d: Open after the kill: %v", round, err)
		}
		l, err := s.Load(testDigest)
		s.Close()
		if err != nil {
			t.Fatalf("round %d: Load after the kill: %v", round, err)
		}
		if l.Corrupt != 0 {
			t.Errorf("round %d: %d corrupt resources", round, l.Corrupt)
		}
		switch {
		case diffResources(crashState(last), l.Resources) == "":
			g = last
			acked++
		case diffResources(crashState(last+1), l.Resources) == "":
			g = last + 1
			inFlight++
		default:
			t.Fatalf("round %d: the store holds neither the state after change set %d, the last acknowledged, nor after %d:\n%s",
				round, last, last+1, diffResources(crashState(last), l.Resources))
		}
	}
	t.Logf("%d kills: the store held the last change set acknowledged %d times, the one being written %d times; "+
		"a change set was cut short %d times, a rewrite %d times; %d change sets in all", rounds, acked, inFlight, cutShort, tempLeft, g)
}

func childLock(path string) int {
	timeout, err := time.ParseDuration(os.Getenv(childTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := Open(path, Options{LockTimeout: timeout})
	if err == nil {
		s.Close()
		fmt.Println("opened")
		return 0
	}
	fmt.Println(err)
	if errors.Is(err, ErrLocked) {
		return 0
	}
	return 1
}

func childReader(path string) int {
	s, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer s.Close()
	l, err := s.Load(testDigest)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println(len(l.Resources), "resources")
	return 0
}

// TestTwoProcesses opens a store in a child process while this one holds
// it: the child fails fast, saying why; a reader is not blocked; once
// this one closes it, the child opens it.
func TestTwoProcesses(t *testing.T) {
	path := storePath(t)
	s := mustOpen(t, path, Options{})
	mustApply(t, s, testDigest, clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster))
	child := func(what, timeout string) (string, time.Duration, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+what, childPath+"="+path, childTimeout+"="+timeout)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), time.Since(start), err
	}
	out, took, err := child("lock", "200ms")
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	want := "lastgood: the store is in use by another process: " + path + " (its lock " + path + ".lock is held; waited 200ms)"
	if !strings.HasPrefix(out, want) {
		t.Errorf("the child said %q, want %q...", out, want)
	}
	// The child's start, and its 200 ms: not a hang.
	if took > 5*time.Second {
		t.Errorf("the child took %v", took)
	}
	if out, _, err := child("reader", ""); err != nil || out != "2 resources" {
		t.Errorf("a reader while the store is held: %q, %v", out, err)
	}
	s.Close()
	if out, _, err := child("lock", "200ms"); err != nil || out != "opened" {
		t.Errorf("after Close, the child: %q, %v", out, err)
	}
}

// startChild runs this test binary as a child process with env added,
// stdin (nil: none) as its input, and returns it, the lines it writes to
// stdout (closed when it ends) and what it writes to stderr.
func startChild(t *testing.T, stdin io.Reader, env ...string) (*exec.Cmd, <-chan string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines, stderr
}
