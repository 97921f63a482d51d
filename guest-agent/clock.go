package main

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// The guest's clock: the clocksource the kernel keeps time with, and the kernel log lines that
// say how it came to it (a TSC marked unstable, a switch of clocksource, the watchdog's
// complaints). Under emulation the clocksource decides what every time read costs, and a kernel
// can pick another one than its neighbour in a bisected range.

const currentClocksourcePath = "/sys/devices/system/clocksource/clocksource0/current_clocksource"

// clockMarks are the parts of the kernel messages a clock line holds (arch/x86/kernel/tsc.c,
// kernel/time/clocksource.c).
var clockMarks = []string{
	"Marking TSC unstable", "Switched to clocksource", "timekeeping watchdog", "clocksource watchdog",
	"Override clocksource", "skipping watchdog check",
}

// kmsgRecordMax is larger than any /dev/kmsg record (a smaller buffer fails the read).
const kmsgRecordMax = 16384

// clockLog reads every record of the kernel log at path (/dev/kmsg) and returns its clock
// lines. No log (a kernel without printk, no permission) is no lines.
func clockLog(path string) []string {
	records, _ := readKmsg(path)
	return clockLines(records)
}

// readKmsg reads every record of the kernel log at path (/dev/kmsg: one record per read, the
// end of the log EAGAIN) without blocking; false when the log cannot be opened.
func readKmsg(path string) (string, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer syscall.Close(fd)
	var text strings.Builder
	buf := make([]byte, kmsgRecordMax)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EPIPE || err == syscall.EINTR {
			continue // a record overwritten while the log was read: the next one follows
		}
		if err != nil || n <= 0 {
			break
		}
		text.Write(buf[:n])
	}
	return text.String(), true
}

// clockLines picks the clock lines out of /dev/kmsg records, each as dmesg prints it.
func clockLines(records string) []string {
	return kmsgLines(records, clockMessage)
}

// kmsgLines are the messages of /dev/kmsg records ("prio,seq,usec,flags;message",
// continuation lines indented) that keep accepts, each as dmesg prints it:
// "[seconds.micros] message".
func kmsgLines(records string, keep func(message string) bool) []string {
	out := []string{}
	for _, line := range strings.Split(records, "\n") {
		head, message, ok := strings.Cut(line, ";")
		if !ok || strings.HasPrefix(line, " ") || !keep(message) {
			continue
		}
		fields := strings.Split(head, ",")
		if len(fields) < 3 {
			continue
		}
		usec, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, fmt.Sprintf("[%5d.%06d] %s", usec/1e6, usec%1e6, unescapeKmsg(message)))
	}
	return out
}

// unescapeKmsg turns the kernel's \xNN escapes of /dev/kmsg back into the characters, as dmesg
// prints them ("ACPI: \x5c_SB_.LNKB" is "ACPI: \_SB_.LNKB"); an escaped byte that is not
// printable ASCII stays escaped.
func unescapeKmsg(message string) string {
	if !strings.Contains(message, `\x`) {
		return message
	}
	var out strings.Builder
	for i := 0; i < len(message); i++ {
		if i+3 < len(message) && message[i] == '\\' && message[i+1] == 'x' {
			if b, err := strconv.ParseUint(message[i+2:i+4], 16, 8); err == nil && b >= 0x20 && b < 0x7f {
				out.WriteByte(byte(b))
				i += 3
				continue
			}
		}
		out.WriteByte(message[i])
	}
	return out.String()
}

func clockMessage(message string) bool {
	for _, mark := range clockMarks {
		if strings.Contains(message, mark) {
			return true
		}
	}
	return false
}
