package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseStatReadsACommWithSpacesAndParentheses(t *testing.T) {
	cases := map[string]stallTask{
		"19187 (cat) R 19183 19183 29508 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 2780989 3133440 362": {
			TID: 19187, Comm: "cat", State: "R", Pgrp: 19183},
		"415 (fio) D 412 412 1 0 -1 4194368":         {TID: 415, Comm: "fio", State: "D", Pgrp: 412},
		"77 (kworker/u4:2-events_unbound) I 2 0 0 0": {TID: 77, Comm: "kworker/u4:2-events_unbound", State: "I"},
		"9 (a) b (c)) S 1 9 9 0":                     {TID: 9, Comm: "a) b (c)", State: "S", Pgrp: 9},
	}
	for line, want := range cases {
		if got, ok := parseStat(line); !ok || got != want {
			t.Errorf("%q: got %+v, %v", line, got, ok)
		}
	}
	for _, bad := range []string{"", "415 fio D 412 412", "x (fio) D 1 2", "415 (fio) D 412", "415 (fio) D 412 pg"} {
		if got, ok := parseStat(bad); ok {
			t.Errorf("%q parsed as %+v", bad, got)
		}
	}
}

func TestInFlightNamesTheDevicesWithIOsInProgressWhateverTheKernelsFieldCount(t *testing.T) {
	diskstats := strings.Join([]string{
		// 20 fields (5.5+: discards and flushes), 32 I/Os in flight
		" 254       0 vda 2123075 167219 67824906 6168697 8854664 1740875 178755608 2175098 32 1264660 8862550 1677970 568 82413672 304194 2506510 214559",
		// 18 fields (4.18+), none in flight
		"   8       0 sda 9003 0 720240 4100 0 0 0 0 0 3800 4100 0 0 0 0",
		// 14 fields (older kernels), 1 in flight
		"   8      16 sdb 500 0 4000 200 10 0 80 5 1 210 205",
		"   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
		"a line cut short 1 2",
		"",
	}, "\n")
	if got, want := inFlight(diskstats), []string{"vda 32", "sdb 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestStallLinesSayEachPartOfTheGuestInOrder(t *testing.T) {
	view := stallView{
		Loadavg:     "3.02 1.10 0.40 3/61 415",
		Clocksource: "hpet",
		Diskstats:   " 254 0 vda 1 0 8 1 0 0 0 0 16 1 1\n 254 16 vdb 1 0 8 1 0 0 0 0 0 1 1\n",
		KmsgRead:    true,
		Kmsg: "6,1,1500000,-;virtio_blk virtio1: [vda] 131072 512-byte logical blocks\n" +
			" SUBSYSTEM=virtio\n" +
			"3,2,125000100,-;INFO: task fio:415 blocked for more than 120 seconds.\n",
		TasksRead: true,
		Tasks: []stallTask{
			{PID: 87, TID: 87, Comm: "kworker/u4:2", State: "D", Pgrp: 0, Wchan: "blk_mq_get_tag"},
			{PID: 412, TID: 415, Comm: "fio", State: "D", Pgrp: 412, Wchan: "io_schedule"},
			{PID: 412, TID: 412, Comm: "fio", State: "S", Pgrp: 412, Wchan: "do_wait"},
			{PID: 420, TID: 420, Comm: "fio", State: "R", Pgrp: 412, Wchan: "0"},
		},
	}
	want := []string{
		"load average: 3.02 1.10 0.40 3/61 415",
		"clocksource: hpet",
		"block devices with I/Os in flight: vda 16",
		"tasks of the command's process group 412 (pid/tid state wchan comm):",
		"  412/412 S do_wait fio",
		"  412/415 D io_schedule fio",
		"  420/420 R - fio",
		"other tasks in state D:",
		"  87/87 D blk_mq_get_tag kworker/u4:2",
		"kernel log, its last 2 records:",
		"  [    1.500000] virtio_blk virtio1: [vda] 131072 512-byte logical blocks",
		"  [  125.000100] INFO: task fio:415 blocked for more than 120 seconds.",
	}
	if got := stallLines(view, 412); !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStallLinesSayWhatWasNotRead(t *testing.T) {
	want := []string{
		"load average: not read",
		"clocksource: not read",
		"block devices with I/Os in flight: not read",
		"tasks: /proc did not answer within 5s",
		"kernel log: cannot be read",
	}
	if got := stallLines(stallView{}, 7); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
	idle := stallLines(stallView{Diskstats: "   8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n", TasksRead: true, KmsgRead: true}, 7)
	for _, line := range []string{"block devices with I/Os in flight: none", "other tasks in state D: none",
		"kernel log, its last 0 records:"} {
		if !contains(idle, line) {
			t.Errorf("no %q in %q", line, idle)
		}
	}
}

func TestStallLinesAreBoundedInNumberAndLength(t *testing.T) {
	var tasks []stallTask
	for i := 0; i < 50; i++ {
		tasks = append(tasks, stallTask{PID: 100 + i, TID: 100 + i, Comm: "fio", State: "D", Pgrp: 412 * (i % 2)})
	}
	var kmsg strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&kmsg, "4,%d,%d,-;record %d %s\n", i, i*1000, i, strings.Repeat("é", 150))
	}
	got := stallLines(stallView{TasksRead: true, Tasks: tasks, KmsgRead: true, Kmsg: kmsg.String()}, 412)
	if len(got) > stallLinesMax {
		t.Fatalf("%d lines", len(got))
	}
	for _, line := range got {
		if len(line) > stallLineMax || !utf8.ValidString(line) {
			t.Fatalf("line of %d bytes, valid UTF-8 %v: %q", len(line), utf8.ValidString(line), line)
		}
	}
	for _, line := range []string{"  ... and 20 more", "kernel log, its last 20 records:"} {
		if !contains(got, line) {
			t.Errorf("no %q in\n%s", line, strings.Join(got, "\n"))
		}
	}
	if last := got[len(got)-1]; !strings.HasPrefix(last, "  [    0.099000] record 99 ") {
		t.Errorf("the log does not end with its last record: %q", last)
	}
}

func TestReadTasksKeepsTheGroupsThreadsAndTheDOnesOfAProcTree(t *testing.T) {
	proc := t.TempDir()
	write := func(pid, tid, stat, wchan string) {
		dir := filepath.Join(proc, pid, "task", tid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "stat"), []byte(stat+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "wchan"), []byte(wchan), 0o644)
	}
	write("412", "412", "412 (fio) S 1 412 412 0", "do_wait")
	write("412", "415", "415 (fio) D 1 412 412 0", "io_schedule")
	write("87", "87", "87 (kworker/0:1) D 2 0 0 0", "blk_mq_get_tag")
	write("1", "1", "1 (init) S 0 1 1 0", "do_select")
	os.MkdirAll(filepath.Join(proc, "sys"), 0o755)
	got := readTasks(proc, 412)
	want := []stallTask{
		{PID: 412, TID: 412, Comm: "fio", State: "S", Pgrp: 412, Wchan: "do_wait"},
		{PID: 412, TID: 415, Comm: "fio", State: "D", Pgrp: 412, Wchan: "io_schedule"},
		{PID: 87, TID: 87, Comm: "kworker/0:1", State: "D", Pgrp: 0, Wchan: "blk_mq_get_tag"},
	}
	byTID := map[int]stallTask{}
	for _, task := range got {
		byTID[task.TID] = task
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for _, w := range want {
		if byTID[w.TID] != w {
			t.Errorf("tid %d: got %+v, want %+v", w.TID, byTID[w.TID], w)
		}
	}
}

func TestATimedOutExecCarriesTheGuestAsItStalledAndOneThatEndedNone(t *testing.T) {
	res := mustExec(t, execRequest{Argv: []string{"sh", "-c", "sleep 4444"}, TimeoutS: 0.5})
	if !res.TimedOut || len(res.Stall) == 0 {
		t.Fatalf("got %+v", res)
	}
	text := strings.Join(res.Stall, "\n")
	for _, part := range []string{"load average: ", "clocksource: ", "block devices with I/Os in flight: ",
		"tasks of the command's process group ", " sleep\n", "kernel log"} {
		if !strings.Contains(text+"\n", part) {
			t.Errorf("no %q in\n%s", part, text)
		}
	}
	done := mustExec(t, execRequest{Argv: []string{"true"}, TimeoutS: 30})
	data, err := json.Marshal(done)
	if err != nil {
		t.Fatal(err)
	}
	if done.Stall != nil || strings.Contains(string(data), "stall") {
		t.Fatalf("a command that ended has a stall: %s", data)
	}
}
