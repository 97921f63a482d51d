package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pipeDrainTimeout is how long output is still read after the main process exits: a daemon
// it started (netserver, say) may hold the pipes open for good.
const pipeDrainTimeout = time.Second

type execRequest struct {
	Argv     []string          `json:"argv"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	StdinB64 []byte            `json:"stdin_b64"`
	TimeoutS float64           `json:"timeout_s"`
	Nice     *int              `json:"nice"`
}

// The nice values a command may start at (setpriority(2)).
const (
	niceMin = -20
	niceMax = 19
)

type execResult struct {
	ExitCode  int     `json:"exit_code"`
	Signal    string  `json:"signal"`
	TimedOut  bool    `json:"timed_out"`
	StdoutB64 []byte  `json:"stdout_b64"`
	StderrB64 []byte  `json:"stderr_b64"`
	DurationS float64 `json:"duration_s"`
	// Stall: the guest just before the kill, when the command timed out (stall.go); absent
	// otherwise.
	Stall []string `json:"stall,omitempty"`
}

func opExec(_ *server, line []byte) (interface{}, func(), error) {
	var req execRequest
	if err := decodeOp(line, &req); err != nil {
		return nil, nil, err
	}
	res, err := runExec(req)
	if err != nil {
		return nil, nil, err
	}
	return res, nil, nil
}

// runExec runs one command in its own process group and collects its output.
func runExec(req execRequest) (*execResult, error) {
	if len(req.Argv) == 0 {
		return nil, errors.New("argv must be a non-empty list")
	}
	if req.TimeoutS < 0 {
		return nil, errors.New("timeout_s must not be negative")
	}
	if req.Nice != nil && (*req.Nice < niceMin || *req.Nice > niceMax) {
		return nil, fmt.Errorf("nice must be from %d to %d, got %d", niceMin, niceMax, *req.Nice)
	}
	if err := checkDir(req.Cwd); err != nil {
		return nil, err
	}
	env := execEnv(req.Env)
	path, err := lookPath(req.Argv[0], envValue(env, "PATH"))
	if err != nil {
		return nil, err
	}

	start := time.Now()
	p, err := startProcess(path, req.Argv, env, req.Cwd, req.Nice)
	if err != nil {
		return nil, fmt.Errorf("start %s: %v", req.Argv[0], err)
	}
	var stdout, stderr bytes.Buffer
	var readers sync.WaitGroup
	readers.Add(2)
	go collect(&readers, &stdout, p.stdout)
	go collect(&readers, &stderr, p.stderr)
	stdinDone := make(chan struct{})
	go feed(stdinDone, p.stdin, req.StdinB64)
	killer := killGroupAfter(p.pid, time.Duration(req.TimeoutS*float64(time.Second)))

	status := <-p.exited
	duration := time.Since(start)
	timedOut, stall := killer.stop()

	deadline := time.Now().Add(pipeDrainTimeout)
	p.stdout.SetReadDeadline(deadline)
	p.stderr.SetReadDeadline(deadline)
	p.stdin.SetWriteDeadline(deadline)
	readers.Wait()
	<-stdinDone
	p.stdout.Close()
	p.stderr.Close()

	code, sig := exitInfo(status)
	return &execResult{
		ExitCode:  code,
		Signal:    sig,
		TimedOut:  timedOut,
		StdoutB64: nonNil(stdout.Bytes()),
		StderrB64: nonNil(stderr.Bytes()),
		DurationS: duration.Seconds(),
		Stall:     stall,
	}, nil
}

// checkDir reports a cwd that is given but is no directory, before anything is started.
func checkDir(cwd string) error {
	if cwd == "" {
		return nil
	}
	fi, err := os.Stat(cwd)
	if err != nil {
		return fmt.Errorf("cwd: %v", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cwd %s: not a directory", cwd)
	}
	return nil
}

// execEnv is the environment of a command: the agent's own, or the request's with PATH
// defaulting to the agent's.
func execEnv(reqEnv map[string]string) []string {
	if reqEnv == nil {
		return os.Environ()
	}
	env := make([]string, 0, len(reqEnv)+1)
	for k, v := range reqEnv {
		env = append(env, k+"="+v)
	}
	if _, ok := reqEnv["PATH"]; !ok {
		env = append(env, "PATH="+os.Getenv("PATH"))
	}
	sort.Strings(env)
	return env
}

func envValue(env []string, key string) string {
	value := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			value = kv[len(key)+1:]
		}
	}
	return value
}

// lookPath resolves a command name without a slash through the directories of pathList.
func lookPath(name, pathList string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		candidate := filepath.Join(dir, name)
		if fi, err := os.Stat(candidate); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%q: executable file not found in PATH %q", name, pathList)
}

// process is a started command: the agent's ends of its pipes and its exit status.
type process struct {
	pid    int
	exited <-chan syscall.WaitStatus
	stdin  *os.File
	stdout *os.File
	stderr *os.File
}

// startProcess starts path as the leader of a new process group with piped stdio, at nice
// value nice (nil: the agent's own).
func startProcess(path string, argv, env []string, dir string, nice *int) (*process, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeFiles(stdinR, stdinW)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeFiles(stdinR, stdinW, stdoutR, stdoutW)
		return nil, err
	}
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{stdinR.Fd(), stdoutW.Fd(), stderrW.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	pid, exited, err := forkExecAt(nice, path, argv, attr)
	closeFiles(stdinR, stdoutW, stderrW)
	if err != nil {
		closeFiles(stdinW, stdoutR, stderrR)
		return nil, err
	}
	return &process{pid: pid, exited: exited, stdin: stdinW, stdout: stdoutR, stderr: stderrR}, nil
}

// forkExecAt forks and execs at nice value nice (nil: the agent's own). A nice value is a
// thread's own on Linux and a child starts with its forking thread's, so the fork runs on a
// thread locked to one goroutine whose value is set first: the command and every process it
// starts begin at that value, before any of their code runs. The thread's own value is put
// back before it is unlocked; where that is not allowed (an agent without CAP_SYS_NICE that
// asked for a higher value), it stays locked and ends with its goroutine. Either way no other
// work of the agent runs at that value, and the Go runtime never clones a locked thread.
func forkExecAt(nice *int, path string, argv []string, attr *syscall.ProcAttr) (int, <-chan syscall.WaitStatus, error) {
	if nice == nil {
		return childReaper().forkExec(path, argv, attr)
	}
	type started struct {
		pid    int
		exited <-chan syscall.WaitStatus
		err    error
	}
	done := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // the raw call: 20 - nice
		if err != nil {
			done <- started{err: fmt.Errorf("nice: %v", err)}
			return
		}
		own := 20 - raw
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, *nice); err != nil {
			runtime.UnlockOSThread() // unchanged
			done <- started{err: fmt.Errorf("nice %d: %v", *nice, err)}
			return
		}
		pid, exited, err := childReaper().forkExec(path, argv, attr)
		if syscall.Setpriority(syscall.PRIO_PROCESS, 0, own) == nil {
			runtime.UnlockOSThread()
		}
		done <- started{pid, exited, err}
	}()
	s := <-done
	return s.pid, s.exited, s.err
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// collect reads r into buf until end of file or the read deadline.
func collect(done *sync.WaitGroup, buf *bytes.Buffer, r io.Reader) {
	defer done.Done()
	buf.ReadFrom(r)
}

// feed writes data to the command's stdin, then closes it so the command sees end of file.
func feed(done chan<- struct{}, w *os.File, data []byte) {
	defer close(done)
	w.Write(data)
	w.Close()
}

// groupKiller kills a process group with SIGKILL when its timeout expires first, after a
// snapshot of the guest as the command stalled (takeStall).
type groupKiller struct {
	mu     sync.Mutex
	pgid   int
	timer  *time.Timer
	exited bool
	fired  bool
	stall  []string
}

// killGroupAfter arms a killer; a zero timeout never fires.
func killGroupAfter(pgid int, timeout time.Duration) *groupKiller {
	k := &groupKiller{pgid: pgid}
	if timeout > 0 {
		k.timer = time.AfterFunc(timeout, k.fire)
	}
	return k
}

// fire takes the snapshot while the group still runs, then kills it, unless its leader exited
// meanwhile: then nothing was killed and the command did not time out.
func (k *groupKiller) fire() {
	k.mu.Lock()
	exited := k.exited
	k.mu.Unlock()
	if exited {
		return
	}
	stall := takeStall(k.pgid)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.exited {
		return
	}
	k.fired, k.stall = true, stall
	syscall.Kill(-k.pgid, syscall.SIGKILL)
}

// stop disarms the killer once the leader has exited and reports whether it had fired, with
// its snapshot of the guest.
func (k *groupKiller) stop() (bool, []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.exited = true
	if k.timer != nil {
		k.timer.Stop()
	}
	return k.fired, k.stall
}

// exitInfo is the exit code and signal name of a wait status; -1 when a signal killed it.
func exitInfo(status syscall.WaitStatus) (int, string) {
	if status.Signaled() {
		return -1, signalName(status.Signal())
	}
	return status.ExitStatus(), ""
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
	syscall.SIGURG: "SIGURG", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ",
	syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF", syscall.SIGWINCH: "SIGWINCH",
	syscall.SIGIO: "SIGIO", syscall.SIGPWR: "SIGPWR", syscall.SIGSYS: "SIGSYS",
}

// signalName is the conventional name of sig, or SIG<number> for one without a name.
func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
