package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER of <linux/prctl.h>

// testMainEnv makes the test binary act as the agent program, for end-to-end tests.
const testMainEnv = "VMBISECT_AGENT_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		os.Exit(runProgram(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Orphans of the commands under test come back to this process, as they would to PID 1,
	// so the reaper's handling of them is exercised and none are left behind.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		panic(errno)
	}
	os.Exit(m.Run())
}

// wireResponse is a response as the host decodes it.
type wireResponse struct {
	ID     int64           `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// testClient talks to an in-process server over pipes.
type testClient struct {
	t        *testing.T
	requests *io.PipeWriter
	lines    chan []byte
}

func startServer(t *testing.T, srv *server) *testClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		sess, _ := srv.serve(inR, outW)
		sess.wait()
		outW.Close()
	}()
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	c := &testClient{t: t, requests: inW, lines: lines}
	t.Cleanup(func() { inW.Close() })
	return c
}

func newTestServer() *server {
	return &server{moduleErrors: []string{}, shutdown: func(bool) {}}
}

func (c *testClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.requests, line+"\n"); err != nil {
		c.t.Fatalf("sending request: %v", err)
	}
}

func (c *testClient) sendJSON(req interface{}) {
	c.t.Helper()
	line, err := json.Marshal(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(line))
}

// recvLine returns the next response line, failing the test after 60 s.
func (c *testClient) recvLine() []byte {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("server closed its output")
		}
		return line
	case <-time.After(60 * time.Second):
		c.t.Fatal("no response within 60 s")
	}
	return nil
}

func (c *testClient) recv() wireResponse {
	c.t.Helper()
	line := c.recvLine()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		c.t.Fatalf("response is not one newline-terminated line: %q", line)
	}
	var resp wireResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		c.t.Fatalf("response %q: %v", line, err)
	}
	return resp
}

// call sends a request, whose "id" is an int, and returns the successful result, decoded into result.
func (c *testClient) call(req map[string]interface{}, result interface{}) {
	c.t.Helper()
	c.sendJSON(req)
	resp := c.recv()
	if !resp.OK || resp.ID != int64(req["id"].(int)) {
		c.t.Fatalf("request %v: got %+v", req, resp)
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		c.t.Fatalf("result %s: %v", resp.Result, err)
	}
}

// processesWithArgv lists the live (not zombie) processes whose argv is exactly argv.
func processesWithArgv(argv ...string) []int {
	var want []byte
	for _, a := range argv {
		want = append(append(want, a...), 0)
	}
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err == nil && bytes.Equal(cmdline, want) {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitUntil polls cond for up to timeout and reports whether it became true.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
