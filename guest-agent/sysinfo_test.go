package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestHelloDescribesTheAgentAndThisKernel(t *testing.T) {
	c := startServer(t, &server{moduleErrors: []string{"/lib/x.ko: boom"}, shutdown: func(bool) {}})
	var hello helloResult
	c.call(map[string]interface{}{"id": 1, "op": "hello"}, &hello)
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if hello.AgentVersion != agentVersion || hello.PID1 || hello.KernelRelease != strings.TrimSpace(string(release)) {
		t.Fatalf("got %+v", hello)
	}
	if hello.KernelVersion == "" || hello.Cmdline == "" || hello.CPUsOnline < 1 || hello.MemTotalKiB <= 0 || hello.UptimeS <= 0 {
		t.Fatalf("got %+v", hello)
	}
	if len(hello.ModuleErrors) != 1 || hello.ModuleErrors[0] != "/lib/x.ko: boom" {
		t.Fatalf("module_errors %q", hello.ModuleErrors)
	}
	if hello.Clocksource != readTrimmed(currentClocksourcePath) {
		t.Fatalf("clocksource %q", hello.Clocksource)
	}
}

func TestHelloListsAreEmptyListsNotNull(t *testing.T) {
	c := startServer(t, &server{shutdown: func(bool) {}})
	c.send(`{"id": 1, "op": "hello"}`)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(c.recv().Result, &fields); err != nil {
		t.Fatal(err)
	}
	if string(fields["module_errors"]) != "[]" || !strings.HasPrefix(string(fields["block_devices"]), "[") {
		t.Fatalf("module_errors %s, block_devices %s", fields["module_errors"], fields["block_devices"])
	}
	if !strings.HasPrefix(string(fields["clock_log"]), "[") {
		t.Fatalf("clock_log %s", fields["clock_log"])
	}
}

func TestCountCPUsCountsRangesAndSingles(t *testing.T) {
	cases := map[string]int{"0": 1, "0-3": 4, "0-3,6,8-9": 7, "": 0, "0-1\n": 2}
	for list, want := range cases {
		if got := countCPUs(strings.TrimSpace(list)); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", list, got, want)
		}
	}
}

func TestMemTotalKiBReadsTheMemTotalLine(t *testing.T) {
	meminfo := "MemFree:          1000 kB\nMemTotal:       24683140 kB\nBuffers: 1 kB\n"
	if got := memTotalKiB(meminfo); got != 24683140 {
		t.Fatalf("got %d", got)
	}
	if got := memTotalKiB(""); got != 0 {
		t.Fatalf("empty meminfo gave %d", got)
	}
}

func TestUptimeSecondsReadsTheFirstField(t *testing.T) {
	if got := uptimeSeconds("350735.47 234388.90"); got != 350735.47 {
		t.Fatalf("got %v", got)
	}
}

func TestSnapshotCopiesProcCountersAndReadsTheClocks(t *testing.T) {
	c := startServer(t, newTestServer())
	before := time.Now().UnixNano()
	var snap snapshotResult
	c.call(map[string]interface{}{"id": 1, "op": "snapshot"}, &snap)
	for _, path := range []string{"/proc/stat", "/proc/meminfo", "/proc/loadavg", "/proc/vmstat"} {
		if snap.Files[path] == "" {
			t.Errorf("%s missing from the snapshot", path)
		}
	}
	if _, err := os.Stat(currentClocksourcePath); err == nil && snap.Files[currentClocksourcePath] == "" {
		t.Errorf("the clocksource is missing from the snapshot")
	}
	if !strings.HasPrefix(snap.Files["/proc/stat"], "cpu ") {
		t.Errorf("/proc/stat is not raw: %.40q", snap.Files["/proc/stat"])
	}
	for path := range snap.Files {
		if !contains(snapshotFiles, path) {
			t.Errorf("unexpected file %s", path)
		}
	}
	if snap.RealtimeNS < before || snap.RealtimeNS > time.Now().UnixNano() {
		t.Errorf("realtime_ns %d is not now", snap.RealtimeNS)
	}
	if snap.MonotonicNS <= 0 || snap.UptimeS <= 0 {
		t.Errorf("monotonic_ns %d, uptime_s %v", snap.MonotonicNS, snap.UptimeS)
	}
}

func TestMonotonicClockAdvances(t *testing.T) {
	first, err := monotonicNS()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	second, _ := monotonicNS()
	if second-first < int64(10*time.Millisecond) {
		t.Fatalf("monotonic clock went from %d to %d over 10 ms", first, second)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
