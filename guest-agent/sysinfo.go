package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

type helloResult struct {
	AgentVersion  string        `json:"agent_version"`
	PID1          bool          `json:"pid1"`
	KernelRelease string        `json:"kernel_release"`
	KernelVersion string        `json:"kernel_version"`
	Cmdline       string        `json:"cmdline"`
	CPUsOnline    int           `json:"cpus_online"`
	MemTotalKiB   int64         `json:"mem_total_kib"`
	UptimeS       float64       `json:"uptime_s"`
	ModuleErrors  []string      `json:"module_errors"`
	BlockDevices  []blockDevice `json:"block_devices"`
	Clocksource   string        `json:"clocksource"`
	ClockLog      []string      `json:"clock_log"`
}

func opHello(s *server, _ []byte) (interface{}, func(), error) {
	var uts syscall.Utsname
	if err := syscall.Uname(&uts); err != nil {
		return nil, nil, err
	}
	moduleErrors := s.moduleErrors
	if moduleErrors == nil {
		moduleErrors = []string{}
	}
	return &helloResult{
		AgentVersion:  agentVersion,
		PID1:          os.Getpid() == 1,
		KernelRelease: utsString(uts.Release[:]),
		KernelVersion: utsString(uts.Version[:]),
		Cmdline:       readTrimmed("/proc/cmdline"),
		CPUsOnline:    countCPUs(readTrimmed("/sys/devices/system/cpu/online")),
		MemTotalKiB:   memTotalKiB(readTrimmed("/proc/meminfo")),
		UptimeS:       uptimeSeconds(readTrimmed("/proc/uptime")),
		ModuleErrors:  moduleErrors,
		BlockDevices:  blockDevices("/sys"),
		Clocksource:   readTrimmed(currentClocksourcePath),
		ClockLog:      clockLog("/dev/kmsg"),
	}, nil, nil
}

// snapshotFiles are the counters a snapshot copies verbatim, and the clocksource they were
// timed with.
var snapshotFiles = []string{
	"/proc/stat", "/proc/diskstats", "/proc/interrupts", "/proc/meminfo",
	"/proc/schedstat", "/proc/vmstat", "/proc/loadavg", "/proc/softirqs", currentClocksourcePath,
}

type snapshotResult struct {
	Files       map[string]string `json:"files"`
	UptimeS     float64           `json:"uptime_s"`
	MonotonicNS int64             `json:"monotonic_ns"`
	RealtimeNS  int64             `json:"realtime_ns"`
}

func opSnapshot(_ *server, _ []byte) (interface{}, func(), error) {
	files := make(map[string]string, len(snapshotFiles))
	for _, path := range snapshotFiles {
		if data, err := os.ReadFile(path); err == nil {
			files[path] = string(data)
		}
	}
	mono, err := monotonicNS()
	if err != nil {
		return nil, nil, err
	}
	return &snapshotResult{
		Files:       files,
		UptimeS:     uptimeSeconds(readTrimmed("/proc/uptime")),
		MonotonicNS: mono,
		RealtimeNS:  time.Now().UnixNano(),
	}, nil, nil
}

// utsString converts a NUL-terminated utsname field (int8 or uint8 by architecture).
func utsString[T int8 | uint8](field []T) string {
	b := make([]byte, 0, len(field))
	for _, c := range field {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// countCPUs counts the CPUs in a sysfs list such as "0-3,6,8-9".
func countCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				continue
			}
		}
		n += last - first + 1
	}
	return n
}

// memTotalKiB is the MemTotal line of /proc/meminfo, in KiB.
func memTotalKiB(meminfo string) int64 {
	for _, line := range strings.Split(meminfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			return n
		}
	}
	return 0
}

// uptimeSeconds is the first field of /proc/uptime.
func uptimeSeconds(uptime string) float64 {
	fields := strings.Fields(uptime)
	if len(fields) == 0 {
		return 0
	}
	s, _ := strconv.ParseFloat(fields[0], 64)
	return s
}

const clockMonotonic = 1 // CLOCK_MONOTONIC of <linux/time.h>

func monotonicNS() (int64, error) {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, errno
	}
	return ts.Nano(), nil
}
