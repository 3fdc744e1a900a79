package helperproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Process is the parent's end of a child process.
type Process struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	once sync.Once
}

// Start runs the test binary again, with env ("NAME=value") added to
// the environment and no test selected, and returns once the child is
// ready: the fields of its first reply.
func Start(env ...string) (*Process, []string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	p := &Process{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(nil, 1<<24)
	ready, err := p.read()
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	return p, ready, nil
}

func (p *Process) read() ([]string, error) {
	if !p.out.Scan() {
		return nil, fmt.Errorf("the child process ended: %v", p.out.Err())
	}
	f := strings.Fields(p.out.Text())
	if len(f) == 0 || f[0] != "ok" {
		return nil, fmt.Errorf("the child process: %s", p.out.Text())
	}
	return f[1:], nil
}

// Do sends a command, its fields on one line, and returns the fields of
// the reply.
func (p *Process) Do(args ...string) ([]string, error) {
	if _, err := fmt.Fprintln(p.in, strings.Join(args, " ")); err != nil {
		return nil, err
	}
	return p.read()
}

// Close ends the child, which Serve lets go at the end of its input, and
// waits for it to exit. It may be called more than once.
func (p *Process) Close() {
	p.once.Do(func() {
		p.in.Close()
		_ = p.cmd.Wait()
	})
}

// Serve is the child's end: it writes "ok" and ready, then calls handle
// with the fields of each line read, until in ends, and writes "ok" and
// what handle returns, or "error: " and its error. A blank line is an
// error.
func Serve(in io.Reader, out io.Writer, ready []string, handle func(fields []string) (string, error)) error {
	if _, err := fmt.Fprintln(out, strings.Join(append([]string{"ok"}, ready...), " ")); err != nil {
		return err
	}
	cmds := bufio.NewScanner(in)
	for cmds.Scan() {
		f := strings.Fields(cmds.Text())
		reply, err := "", errors.New("empty command")
		if len(f) > 0 {
			reply, err = handle(f)
		}
		if err != nil {
			fmt.Fprintln(out, "error:", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Fprintln(out, strings.TrimSpace("ok "+reply))
	}
	return cmds.Err()
}
