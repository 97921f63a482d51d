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

// niceOf is the nice value of process pid, field 19 of /proc/PID/stat.
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
	nice, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatalf("stat %q: %v", stat, err)
	}
	return nice
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// threadNices is the nice value of every thread of the agent's own process.
func threadNices(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, path := range tasks {
		if data, err := os.ReadFile(path); err == nil {
			out[path] = niceOf(t, string(data))
		}
	}
	return out
}

func TestExecStartsTheCommandAndItsChildrenAtTheRequestedNice(t *testing.T) {
	own := niceOf(t, mustRead(t, "/proc/self/stat"))
	nice := own + 7
	if nice > niceMax {
		if os.Geteuid() != 0 {
			t.Skipf("the tests run at nice %d: no higher value to ask for", own)
		}
		nice = own - 7
	}
	script := "sleep 5 & cat /proc/$$/stat; cat /proc/$!/stat; kill $!"
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", script}, Nice: &nice})
	lines := strings.Split(strings.TrimSpace(string(res.StdoutB64)), "\n")
	if res.ExitCode != 0 || len(lines) != 2 {
		t.Fatalf("got %+v", res)
	}
	if shell, child := niceOf(t, lines[0]), niceOf(t, lines[1]); shell != nice || child != nice {
		t.Fatalf("shell at nice %d, its child at %d, want %d for both", shell, child, nice)
	}
	// the forking thread ends just after the fork: no thread of the agent keeps that value
	allOwn := func() bool {
		for _, n := range threadNices(t) {
			if n != own {
				return false
			}
		}
		return true
	}
	if !waitUntil(3*time.Second, allOwn) {
		t.Fatalf("agent threads after a niced exec: %v, want all at its own %d", threadNices(t), own)
	}
	plain := mustExec(t, execRequest{Argv: []string{"cat", "/proc/self/stat"}})
	if n := niceOf(t, string(plain.StdoutB64)); n != own {
		t.Fatalf("an exec without nice started at %d, want the agent's %d", n, own)
	}
}

func TestExecAtANegativeNiceNeedsPrivilegeAndGetsIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a nice below the agent's own needs CAP_SYS_NICE; the agent runs as root in its guest")
	}
	nice := -5
	res := mustExec(t, execRequest{Argv: []string{"cat", "/proc/self/stat"}, Nice: &nice})
	if n := niceOf(t, string(res.StdoutB64)); n != nice {
		t.Fatalf("started at nice %d, want %d", n, nice)
	}
}

func TestExecRefusesANiceOutsideItsRangeBeforeStarting(t *testing.T) {
	for _, nice := range []int{-21, 20} {
		nice := nice
		marker := filepath.Join(t.TempDir(), "ran")
		_, err := runExec(execRequest{Argv: []string{"touch", marker}, Nice: &nice})
		if err == nil || !strings.Contains(err.Error(), "nice must be from -20 to 19") {
			t.Fatalf("nice %d: err %v", nice, err)
		}
		if _, statErr := os.Stat(marker); statErr == nil {
			t.Fatalf("nice %d: the command ran", nice)
		}
	}
}

func TestExecRequestCarriesNiceOnlyWhenGiven(t *testing.T) {
	var with, without execRequest
	if err := decodeOp([]byte(`{"id":1,"op":"exec","argv":["true"],"nice":5}`), &with); err != nil {
		t.Fatal(err)
	}
	if err := decodeOp([]byte(`{"id":1,"op":"exec","argv":["true"]}`), &without); err != nil {
		t.Fatal(err)
	}
	if with.Nice == nil || *with.Nice != 5 || without.Nice != nil {
		t.Fatalf("with %+v, without %+v", with.Nice, without.Nice)
	}
}
