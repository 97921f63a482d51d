package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func mustExec(t *testing.T, req execRequest) *execResult {
	t.Helper()
	res, err := runExec(req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Argv, err)
	}
	return res
}

func TestExecReportsExitCodeAndSeparateOutputs(t *testing.T) {
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if res.ExitCode != 3 || res.Signal != "" || res.TimedOut {
		t.Fatalf("got %+v", res)
	}
	if string(res.StdoutB64) != "out\n" || string(res.StderrB64) != "err\n" {
		t.Fatalf("stdout %q, stderr %q", res.StdoutB64, res.StderrB64)
	}
}

func TestExecReportsTheSignalThatKilledTheProcess(t *testing.T) {
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", "kill -TERM $$"}})
	if res.ExitCode != -1 || res.Signal != "SIGTERM" || res.TimedOut {
		t.Fatalf("got %+v", res)
	}
}

func TestExecTimeoutKillsTheWholeProcessGroup(t *testing.T) {
	start := time.Now()
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", "sleep 4242 & sleep 4242"}, TimeoutS: 1})
	if elapsed := time.Since(start); elapsed > 4*time.Second {
		t.Fatalf("exec returned after %v", elapsed)
	}
	if !res.TimedOut || res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Fatalf("got %+v", res)
	}
	if res.DurationS < 0.9 || res.DurationS > 3 {
		t.Fatalf("duration_s %v, want about 1", res.DurationS)
	}
	if !waitUntil(3*time.Second, func() bool { return len(processesWithArgv("sleep", "4242")) == 0 }) {
		t.Fatalf("sleep processes left behind: %v", processesWithArgv("sleep", "4242"))
	}
}

func TestExecWithoutTimeoutIsNotKilled(t *testing.T) {
	res := mustExec(t, execRequest{Argv: []string{"sleep", "0.3"}})
	if res.TimedOut || res.ExitCode != 0 || res.DurationS < 0.3 || res.DurationS > 2 {
		t.Fatalf("got %+v", res)
	}
}

func TestExecReturnsSoonWhenADaemonKeepsItsPipesOpen(t *testing.T) {
	defer func() {
		for _, pid := range processesWithArgv("sleep", "4343") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	start := time.Now()
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", "echo started; sleep 4343 &"}})
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Fatalf("exec returned after %v", elapsed)
	}
	if res.ExitCode != 0 || string(res.StdoutB64) != "started\n" {
		t.Fatalf("got %+v", res)
	}
	if len(processesWithArgv("sleep", "4343")) != 1 {
		t.Fatal("the daemon should still run after its starter exited")
	}
}

func TestExecDeliversStdin(t *testing.T) {
	data := make([]byte, 1<<20)
	rand.Read(data)
	res := mustExec(t, execRequest{Argv: []string{"cat"}, StdinB64: data})
	if !bytes.Equal(res.StdoutB64, data) {
		t.Fatalf("cat echoed %d bytes, want the %d sent", len(res.StdoutB64), len(data))
	}
}

func TestExecWithoutStdinGivesEndOfFile(t *testing.T) {
	res := mustExec(t, execRequest{Argv: []string{"cat"}, TimeoutS: 5})
	if res.TimedOut || res.ExitCode != 0 || len(res.StdoutB64) != 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestExecEnvReplacesTheEnvironmentAndDefaultsPATHToTheAgents(t *testing.T) {
	t.Setenv("VMBISECT_TEST_INHERITED", "leaked")
	res := mustExec(t, execRequest{
		Argv: []string{"sh", "-c", `echo "$FOO|${VMBISECT_TEST_INHERITED-unset}|$PATH"`},
		Env:  map[string]string{"FOO": "bar baz"},
	})
	if want := "bar baz|unset|" + os.Getenv("PATH") + "\n"; string(res.StdoutB64) != want {
		t.Fatalf("got %q, want %q", res.StdoutB64, want)
	}
}

func TestExecWithoutEnvInheritsTheAgentsEnvironment(t *testing.T) {
	t.Setenv("VMBISECT_TEST_INHERITED", "yes")
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", `echo "$VMBISECT_TEST_INHERITED"`}})
	if string(res.StdoutB64) != "yes\n" {
		t.Fatalf("got %q", res.StdoutB64)
	}
}

func TestExecResolvesArgv0ThroughThePATHOfTheRequestEnv(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "vmbisect-test-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho from-tool \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mustExec(t, execRequest{
		Argv: []string{"vmbisect-test-tool", "arg"},
		Env:  map[string]string{"PATH": dir + ":/usr/bin:/bin"},
	})
	if string(res.StdoutB64) != "from-tool arg\n" {
		t.Fatalf("got %+v", res)
	}
}

func TestExecHonoursCwd(t *testing.T) {
	dir := t.TempDir()
	res := mustExec(t, execRequest{Argv: []string{"pwd", "-P"}, Cwd: dir})
	want, _ := filepath.EvalSymlinks(dir)
	if strings.TrimSpace(string(res.StdoutB64)) != want {
		t.Fatalf("pwd %q, want %q", res.StdoutB64, want)
	}
}

func TestExecOfAMissingProgramIsAnErrorResponseNotACrash(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send(`{"id": 1, "op": "exec", "argv": ["vmbisect-no-such-program"]}`)
	c.send(`{"id": 2, "op": "exec", "argv": ["/nonexistent/program"]}`)
	c.send(`{"id": 3, "op": "exec", "argv": ["true"], "cwd": "/nonexistent"}`)
	for i := 0; i < 3; i++ {
		resp := c.recv()
		if resp.OK || resp.Error == "" {
			t.Fatalf("got %+v", resp)
		}
		t.Logf("id %d: %s", resp.ID, resp.Error)
	}
	var res execResult
	c.call(map[string]interface{}{"id": 4, "op": "exec", "argv": []string{"true"}}, &res)
}

func TestExecRejectsAnEmptyArgvAndANegativeTimeout(t *testing.T) {
	if _, err := runExec(execRequest{}); err == nil {
		t.Fatal("empty argv accepted")
	}
	if _, err := runExec(execRequest{Argv: []string{"true"}, TimeoutS: -1}); err == nil {
		t.Fatal("negative timeout accepted")
	}
}

func TestExecDelivers20MBOfStdoutIntactThroughTheProtocol(t *testing.T) {
	data := make([]byte, 20<<20)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, newTestServer())
	var res execResult
	c.call(map[string]interface{}{"id": 1, "op": "exec", "argv": []string{"cat", path}}, &res)
	if !bytes.Equal(res.StdoutB64, data) {
		t.Fatalf("got %d bytes of stdout, want the file's %d", len(res.StdoutB64), len(data))
	}
}

func TestExecOutputBytesThatAreNotUTF8SurviveTheProtocol(t *testing.T) {
	c := startServer(t, newTestServer())
	var res execResult
	c.call(map[string]interface{}{"id": 1, "op": "exec", "argv": []string{"printf", `\377\376\000\200abc`}}, &res)
	if want := "\xff\xfe\x00\x80abc"; string(res.StdoutB64) != want {
		t.Fatalf("got %q, want %q", res.StdoutB64, want)
	}
}

func TestExecResultHasEveryFieldAndEmptyOutputIsAnEmptyString(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send(`{"id": 1, "op": "exec", "argv": ["true"]}`)
	resp := c.recv()
	var fields map[string]interface{}
	if err := json.Unmarshal(resp.Result, &fields); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"exit_code", "signal", "timed_out", "stdout_b64", "stderr_b64", "duration_s"} {
		if _, ok := fields[key]; !ok {
			t.Errorf("result lacks %s: %s", key, resp.Result)
		}
	}
	if fields["stdout_b64"] != "" || fields["stderr_b64"] != "" {
		t.Errorf("empty output should be \"\": %s", resp.Result)
	}
}

func TestReaperDeliversEachStatusToTheExecThatStartedIt(t *testing.T) {
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(code int) {
			defer wg.Done()
			res, err := runExec(execRequest{Argv: []string{"sh", "-c", "exit $0", strconv.Itoa(code)}})
			if err == nil && res.ExitCode != code {
				err = fmt.Errorf("exit %d reported as %d", code, res.ExitCode)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestOrphansAreReaped(t *testing.T) {
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", "sleep 0.2 >/dev/null 2>&1 & echo $!"}})
	pid := strings.TrimSpace(string(res.StdoutB64))
	if pid == "" {
		t.Fatalf("no pid in %+v", res)
	}
	if !waitUntil(5*time.Second, func() bool {
		_, err := os.Stat("/proc/" + pid)
		return os.IsNotExist(err)
	}) {
		t.Fatalf("orphan %s was not reaped", pid)
	}
}

func TestSignalNamesAreConventional(t *testing.T) {
	cases := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV", syscall.Signal(40): "SIG40"}
	for sig, want := range cases {
		if got := signalName(sig); got != want {
			t.Errorf("signalName(%d) = %q, want %q", int(sig), got, want)
		}
	}
}
