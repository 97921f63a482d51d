package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fakeSysfs builds a small /sys with a SCSI disk behind a virtio_scsi host, a virtio-blk
// disk, a device-mapper disk without any attributes, and loop and ram devices.
func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, contents string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}

	scsiDev := "devices/pci0000:00/0000:00:04.0/virtio2/host2/target2:0:0/2:0:0:0"
	write(scsiDev+"/model", "QEMU HARDDISK   \n")
	write(scsiDev+"/vendor", "QEMU    \n")
	link(filepath.Join(root, "bus/scsi/drivers/sd"), scsiDev+"/driver")
	write("class/scsi_host/host2/proc_name", "virtio_scsi\n")
	write("block/sda/size", "2097152\n")
	write("block/sda/queue/rotational", "1\n")
	write("block/sda/queue/scheduler", "mq-deadline kyber [bfq] none\n")
	write("block/sda/queue/nr_requests", "64\n")
	write("block/sda/queue/logical_block_size", "512\n")
	write("block/sda/queue/max_sectors_kb", "1280\n")
	write("block/sda/queue/read_ahead_kb", "128\n")
	write("block/sda/mq/0/cpu_list", "0\n")
	write("block/sda/mq/1/cpu_list", "1\n")
	link(filepath.Join(root, scsiDev), "block/sda/device")

	blkDev := "devices/pci0000:00/0000:00:05.0/virtio3"
	link(filepath.Join(root, "bus/virtio/drivers/virtio_blk"), blkDev+"/driver")
	write("block/vda/size", "16\n")
	write("block/vda/queue/rotational", "0\n")
	write("block/vda/queue/scheduler", "[none] mq-deadline\n")
	write("block/vda/queue/logical_block_size", "4096\n")
	write("block/vda/mq/0/cpu_list", "0-1\n")
	link(filepath.Join(root, blkDev), "block/vda/device")

	write("block/dm-0/uevent", "")
	write("block/loop0/size", "0\n")
	write("block/ram0/size", "8192\n")
	return root
}

func TestBlockDevicesDescribesDisksFromSysfs(t *testing.T) {
	got := blockDevices(fakeSysfs(t))
	want := []blockDevice{
		{Name: "dm-0", Schedulers: []string{}},
		{
			Name: "sda", SizeBytes: 1 << 30, Rotational: true,
			Scheduler: "bfq", Schedulers: []string{"mq-deadline", "kyber", "bfq", "none"},
			NrRequests: 64, NrHwQueues: 2, LogicalBlockSize: 512, MaxSectorsKB: 1280, ReadAheadKB: 128,
			Model: "QEMU HARDDISK", Vendor: "QEMU", Driver: "sd", HostDriver: "virtio_scsi",
		},
		{
			Name: "vda", SizeBytes: 16 * 512,
			Scheduler: "none", Schedulers: []string{"none", "mq-deadline"},
			NrHwQueues: 1, LogicalBlockSize: 4096, Driver: "virtio_blk",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestBlockDevicesWithoutSysfsIsAnEmptyList(t *testing.T) {
	if got := blockDevices(filepath.Join(t.TempDir(), "missing")); got == nil || len(got) != 0 {
		t.Fatalf("got %#v", got)
	}
}

func TestParseSchedulerFindsTheBracketedOne(t *testing.T) {
	cases := []struct {
		line   string
		active string
		all    []string
	}{
		{"[mq-deadline] kyber none", "mq-deadline", []string{"mq-deadline", "kyber", "none"}},
		{"none", "none", []string{"none"}},
		{"", "", []string{}},
	}
	for _, c := range cases {
		active, all := parseScheduler(c.line)
		if active != c.active || !reflect.DeepEqual(all, c.all) {
			t.Errorf("parseScheduler(%q) = %q, %q", c.line, active, all)
		}
	}
}

func TestIsSCSIHostNameWantsHostAndDigits(t *testing.T) {
	for name, want := range map[string]bool{"host0": true, "host12": true, "host": false, "hostx": false, "target0:0:0": false} {
		if got := isSCSIHostName(name); got != want {
			t.Errorf("isSCSIHostName(%q) = %v", name, got)
		}
	}
}
