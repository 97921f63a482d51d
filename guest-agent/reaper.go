package main

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper is the only caller of wait4 in the process. It reaps every child, including orphans
// re-parented to PID 1, and hands each exit status to whoever started that child.
//
// A child cannot be reaped before it is registered: forkExec holds mu from fork until the
// registration, and the reaper needs mu to hand a status over. So every status without a
// waiter belongs to a process the agent did not start, and is dropped.
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan syscall.WaitStatus
}

var (
	reaperOnce sync.Once
	theReaper  *reaper
)

// childReaper returns the process-wide reaper, starting it on first use.
func childReaper() *reaper {
	reaperOnce.Do(func() {
		r := &reaper{waiters: map[int]chan syscall.WaitStatus{}}
		sigchld := make(chan os.Signal, 1)
		signal.Notify(sigchld, syscall.SIGCHLD)
		go r.run(sigchld)
		theReaper = r
	})
	return theReaper
}

// forkExec starts a process; its exit status arrives on the returned channel.
func (r *reaper) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, <-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return 0, nil, err
	}
	exited := make(chan syscall.WaitStatus, 1)
	r.waiters[pid] = exited
	return pid, exited, nil
}

func (r *reaper) run(sigchld <-chan os.Signal) {
	r.reapAll()
	for range sigchld {
		r.reapAll()
	}
}

// reapAll collects every child that has exited; SIGCHLDs coalesce, so one may stand for many.
func (r *reaper) reapAll() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		r.mu.Lock()
		if exited, ok := r.waiters[pid]; ok {
			exited <- status
			delete(r.waiters, pid)
		}
		r.mu.Unlock()
	}
}
