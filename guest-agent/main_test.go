package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestVersionFlagPrintsTheVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runProgram([]string{"-version"}, &stdout, &stderr); code != 0 || stdout.String() != "vmbisect-agent "+agentVersion+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestExactlyOneServingModeMustBeChosen(t *testing.T) {
	for _, args := range [][]string{{}, {"-stdio", "-listen", "/tmp/x"}, {"-stdio", "extra"}, {"-bogus"}} {
		var stdout, stderr bytes.Buffer
		if code := runProgram(args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// runAgent runs this test binary as the agent program with the given flags and stdin.
func runAgent(t *testing.T, stdin string, args ...string) *execResult {
	t.Helper()
	return mustExec(t, execRequest{
		Argv:     append([]string{os.Args[0]}, args...),
		Env:      map[string]string{testMainEnv: "1"},
		StdinB64: []byte(stdin),
		TimeoutS: 60,
	})
}

func TestStdioModeAnswersEveryRequestThenExitsAtEndOfInput(t *testing.T) {
	res := runAgent(t, `{"id":1,"op":"exec","argv":["sh","-c","sleep 0.2; echo hi"]}`+"\n"+`{"id":2,"op":"hello"}`+"\n", "-stdio")
	if res.ExitCode != 0 {
		t.Fatalf("agent exited %d: %s", res.ExitCode, res.StderrB64)
	}
	lines := strings.Split(strings.TrimSuffix(string(res.StdoutB64), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"id":2,"ok":true,`) || !strings.HasPrefix(lines[1], `{"id":1,"ok":true,`) {
		t.Fatalf("stdout %q", res.StdoutB64)
	}
}

func TestShutdownInOrdinaryModeRepliesThenExitsZeroWithoutWaitingForOtherRequests(t *testing.T) {
	defer func() {
		for _, pid := range processesWithArgv("sleep", "3131") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	res := runAgent(t, `{"id":8,"op":"exec","argv":["sleep","3131"]}`+"\n"+`{"id":7,"op":"shutdown"}`+"\n", "-stdio")
	if res.ExitCode != 0 || res.DurationS > 10 {
		t.Fatalf("agent exited %d after %vs: %s", res.ExitCode, res.DurationS, res.StderrB64)
	}
	if !strings.HasPrefix(string(res.StdoutB64), `{"id":7,"ok":true,"result":{}}`+"\n") {
		t.Fatalf("stdout %q", res.StdoutB64)
	}
}

func TestListenModeServesOneConnectionAfterAnother(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := serveListen(newTestServer(), sock); err == nil {
		t.Fatal("listen replaced a file that is not a socket")
	}
	os.Remove(sock)
	go serveListen(newTestServer(), sock)
	for id := 1; id <= 2; id++ {
		var conn net.Conn
		if !waitUntil(5*time.Second, func() bool {
			var err error
			conn, err = net.Dial("unix", sock)
			return err == nil
		}) {
			t.Fatal("cannot connect")
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write([]byte(`{"id":` + strconv.Itoa(id) + `,"op":"hello"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadBytes('\n')
		var resp wireResponse
		if err != nil || json.Unmarshal(line, &resp) != nil || resp.ID != int64(id) || !resp.OK {
			t.Fatalf("connection %d: %q, %v", id, line, err)
		}
		conn.Close()
	}
}
