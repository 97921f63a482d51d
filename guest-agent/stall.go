package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The guest when a command ran past its timeout, taken just before the agent kills it: the
// command's tasks and every task in uninterruptible sleep (state D) with where each one waits,
// the block devices with I/Os in flight, the load, the clocksource and the kernel log's last
// records. A run that stalls then says why (an I/O that never completed, a task stuck on a
// lock, a clock that stopped) instead of only that it took too long.

const (
	stallLinesMax    = 60  // lines of a snapshot at most
	stallLineMax     = 200 // characters of a line at most
	stallTasksMax    = 30  // task lines at most (the command's group first, then the D ones)
	stallKmsgRecords = 20  // the kernel log's last records
	// stallReadTimeout bounds the reading: a /proc file of a task stuck on a lock may block its
	// reader too, and the command must still be killed.
	stallReadTimeout = 5 * time.Second
)

// stallTask is one thread as /proc/PID/task/TID/stat and wchan show it.
type stallTask struct {
	PID, TID int
	Comm     string
	State    string // R, S, D, ... (the stat file's third field)
	Pgrp     int
	Wchan    string // the kernel function it sleeps in; "0" or "" when running or unknown
}

// stallView is what the snapshot read; zero fields were not read (within the time bound).
type stallView struct {
	Loadavg     string
	Clocksource string
	Diskstats   string
	KmsgRead    bool // the kernel log could be opened
	Kmsg        string
	TasksRead   bool // /proc's tasks were all read
	Tasks       []stallTask
}

// takeStall reads the guest as the command of process group pgid stalled, at most
// stallReadTimeout long (whatever was read by then), and formats it as stallLines does.
func takeStall(pgid int) []string {
	var mu sync.Mutex
	view := stallView{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		set := func(f func(v *stallView)) {
			mu.Lock()
			defer mu.Unlock()
			f(&view)
		}
		// the cheap files first, /proc's tasks (the reads that may block) last
		loadavg, clocksource := readTrimmed("/proc/loadavg"), readTrimmed(currentClocksourcePath)
		diskstats, _ := os.ReadFile("/proc/diskstats")
		set(func(v *stallView) { v.Loadavg, v.Clocksource, v.Diskstats = loadavg, clocksource, string(diskstats) })
		kmsg, ok := readKmsg("/dev/kmsg")
		set(func(v *stallView) { v.Kmsg, v.KmsgRead = kmsg, ok })
		tasks := readTasks("/proc", pgid)
		set(func(v *stallView) { v.Tasks, v.TasksRead = tasks, true })
	}()
	select {
	case <-done:
	case <-time.After(stallReadTimeout):
	}
	mu.Lock()
	defer mu.Unlock()
	return stallLines(view, pgid)
}

// readTasks reads every thread under proc (/proc) and keeps those of process group pgid and
// those in state D.
func readTasks(proc string, pgid int) []stallTask {
	out := []stallTask{}
	pids, _ := os.ReadDir(proc)
	for _, p := range pids {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(proc, p.Name(), "task")
		tids, _ := os.ReadDir(dir)
		for _, t := range tids {
			stat, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
			if err != nil {
				continue // it ended meanwhile
			}
			task, ok := parseStat(string(stat))
			if !ok || (task.Pgrp != pgid && task.State != "D") {
				continue
			}
			task.PID = pid
			task.Wchan = readTrimmed(filepath.Join(dir, t.Name(), "wchan"))
			out = append(out, task)
		}
	}
	return out
}

// parseStat reads a thread's stat line, "tid (comm) state ppid pgrp ..." (proc(5)); comm may
// hold spaces and parentheses, so it ends at the line's last ')'. PID is left to the caller.
func parseStat(line string) (stallTask, bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return stallTask{}, false
	}
	tid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return stallTask{}, false
	}
	rest := strings.Fields(line[end+1:])
	if len(rest) < 3 {
		return stallTask{}, false
	}
	pgrp, err := strconv.Atoi(rest[2])
	if err != nil {
		return stallTask{}, false
	}
	return stallTask{TID: tid, Comm: line[open+1 : end], State: rest[0], Pgrp: pgrp}, true
}

// inFlight is "name count" for each block device of a /proc/diskstats text with I/Os in flight
// (its ninth statistic, "I/Os currently in progress": the line's twelfth field).
func inFlight(diskstats string) []string {
	out := []string{}
	for _, line := range strings.Split(diskstats, "\n") {
		f := strings.Fields(line)
		if len(f) < 12 {
			continue
		}
		if n, err := strconv.ParseUint(f[11], 10, 64); err == nil && n > 0 {
			out = append(out, fmt.Sprintf("%s %d", f[2], n))
		}
	}
	return out
}

// stallLines formats a snapshot of the guest whose command ran in process group pgid: at most
// stallLinesMax lines of at most stallLineMax characters.
func stallLines(v stallView, pgid int) []string {
	out := []string{
		"load average: " + orNotRead(v.Loadavg),
		"clocksource: " + orNotRead(v.Clocksource),
	}
	disks := "not read"
	if v.Diskstats != "" {
		disks = strings.Join(inFlight(v.Diskstats), ", ")
		if disks == "" {
			disks = "none"
		}
	}
	out = append(out, "block devices with I/Os in flight: "+disks)
	if !v.TasksRead {
		out = append(out, fmt.Sprintf("tasks: /proc did not answer within %v", stallReadTimeout))
	} else {
		out = append(out, stallTaskLines(v.Tasks, pgid)...)
	}
	switch {
	case !v.KmsgRead:
		out = append(out, "kernel log: cannot be read")
	default:
		records := kmsgLines(v.Kmsg, func(string) bool { return true })
		if len(records) > stallKmsgRecords {
			records = records[len(records)-stallKmsgRecords:]
		}
		out = append(out, fmt.Sprintf("kernel log, its last %d records:", len(records)))
		for _, r := range records {
			out = append(out, "  "+r)
		}
	}
	if len(out) > stallLinesMax {
		out = out[:stallLinesMax]
	}
	for i, line := range out {
		if len(line) > stallLineMax {
			cut := stallLineMax
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut-- // not inside a character
			}
			out[i] = line[:cut]
		}
	}
	return out
}

// stallTaskLines lists the group's tasks, then the other tasks in state D, each as
// "  pid/tid state wchan comm" in pid order, stallTasksMax of them at most.
func stallTaskLines(tasks []stallTask, pgid int) []string {
	var group, others []stallTask
	for _, t := range tasks {
		if t.Pgrp == pgid {
			group = append(group, t)
		} else {
			others = append(others, t)
		}
	}
	left := stallTasksMax
	out := []string{fmt.Sprintf("tasks of the command's process group %d (pid/tid state wchan comm):", pgid)}
	out = append(out, taskLines(group, &left)...)
	if len(others) == 0 {
		return append(out, "other tasks in state D: none")
	}
	out = append(out, "other tasks in state D:")
	return append(out, taskLines(others, &left)...)
}

// taskLines are tasks' lines in pid order, at most *left of them (counted down), and one
// line counting those left out.
func taskLines(tasks []stallTask, left *int) []string {
	sort.Slice(tasks, func(i, j int) bool {
		if tasks[i].PID != tasks[j].PID {
			return tasks[i].PID < tasks[j].PID
		}
		return tasks[i].TID < tasks[j].TID
	})
	out := []string{}
	for i, t := range tasks {
		if *left == 0 {
			return append(out, fmt.Sprintf("  ... and %d more", len(tasks)-i))
		}
		wchan := t.Wchan
		if wchan == "" || wchan == "0" {
			wchan = "-"
		}
		out = append(out, fmt.Sprintf("  %d/%d %s %s %s", t.PID, t.TID, t.State, wchan, t.Comm))
		*left--
	}
	return out
}

func orNotRead(s string) string {
	if s == "" {
		return "not read"
	}
	return s
}
