package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestClockLinesPickTheClocksourceSwitchesOfARealLog(t *testing.T) {
	// testdata/kmsg-kvm.txt: /dev/kmsg records as read from a KVM guest (kvm-clock, then the TSC)
	records, err := os.ReadFile("testdata/kmsg-kvm.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"[    0.390534] clocksource: Switched to clocksource kvm-clock",
		"[    0.476591] clocksource: Switched to clocksource tsc",
	}
	if got := clockLines(string(records)); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestClockLinesKeepTheUnstableTSCAndTheWatchdog(t *testing.T) {
	// records made of 6.1's own messages (arch/x86/kernel/tsc.c, kernel/time/clocksource.c)
	records := strings.Join([]string{
		"6,120,211004,-;tsc: Marking TSC unstable due to TSCs unsynchronized",
		"6,180,1730009,-;clocksource: Switched to clocksource hpet",
		"4,400,61250100,-;clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc' as unstable because the skew is too large:",
		"4,401,61250120,-;clocksource:                       'hpet' wd_nsec: 503 wd_now: 1 wd_last: 0 mask: ffffffff",
		"6,402,61250300,-;tsc: Marking TSC unstable due to clocksource watchdog",
		"6,403,61251000,-;clocksource: Override clocksource tsc is unstable and not HRT compatible - cannot switch while in HRT/NOHZ mode",
		" SUBSYSTEM=clocksource",
		"6,404,61252000,-;clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x1, max_idle_ns: 2 ns",
		"not a record",
	}, "\n")
	got := clockLines(records)
	want := []string{
		"[    0.211004] tsc: Marking TSC unstable due to TSCs unsynchronized",
		"[    1.730009] clocksource: Switched to clocksource hpet",
		"[   61.250100] clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc' as unstable because the skew is too large:",
		"[   61.250300] tsc: Marking TSC unstable due to clocksource watchdog",
		"[   61.251000] clocksource: Override clocksource tsc is unstable and not HRT compatible - cannot switch while in HRT/NOHZ mode",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestClockLogReadsAFileOfRecordsAndNothingWithoutOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, []byte("6,1,5000000,-;clocksource: Switched to clocksource hpet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := clockLog(path); !reflect.DeepEqual(got, []string{"[    5.000000] clocksource: Switched to clocksource hpet"}) {
		t.Fatalf("got %q", got)
	}
	if got := clockLog(filepath.Join(t.TempDir(), "none")); got == nil || len(got) != 0 {
		t.Fatalf("no log gave %q", got)
	}
}

func TestClockLogReadsTheLiveKernelLogToItsEndWithoutBlocking(t *testing.T) {
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Skip("no /dev/kmsg here")
	}
	if got := clockLog("/dev/kmsg"); got == nil {
		t.Fatal("nil instead of a list")
	}
}

func TestKmsgLinesUnescapeWhatTheKernelEscapedAsDmesgDoes(t *testing.T) {
	// /dev/kmsg escapes a backslash and every unprintable byte as \xNN (kernel/printk/printk.c)
	records := strings.Join([]string{
		`6,90,1200000,-;ACPI: \x5c_SB_.LNKB: Enabled at IRQ 10`,
		`4,91,1300000,-;bad byte \x07 kept, a literal \x5cx41 stays text`,
	}, "\n")
	got := kmsgLines(records, func(string) bool { return true })
	want := []string{
		`[    1.200000] ACPI: \_SB_.LNKB: Enabled at IRQ 10`,
		`[    1.300000] bad byte \x07 kept, a literal \x41 stays text`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}
