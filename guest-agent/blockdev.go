package main

import (
	"os"
	"path/filepath"
	"strings"
)

type blockDevice struct {
	Name             string   `json:"name"`
	SizeBytes        int64    `json:"size_bytes"`
	Rotational       bool     `json:"rotational"`
	Scheduler        string   `json:"scheduler"`
	Schedulers       []string `json:"schedulers"`
	NrRequests       int      `json:"nr_requests"`
	NrHwQueues       int      `json:"nr_hw_queues"`
	LogicalBlockSize int      `json:"logical_block_size"`
	MaxSectorsKB     int      `json:"max_sectors_kb"`
	ReadAheadKB      int      `json:"read_ahead_kb"`
	Model            string   `json:"model"`
	Vendor           string   `json:"vendor"`
	Driver           string   `json:"driver"`
	HostDriver       string   `json:"host_driver"`
}

// blockDevices describes the disks under sysRoot/block, sorted by name, without loop and
// ram devices.
func blockDevices(sysRoot string) []blockDevice {
	devs := []blockDevice{}
	entries, err := os.ReadDir(filepath.Join(sysRoot, "block")) // sorted by name
	if err != nil {
		return devs
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
			continue
		}
		devs = append(devs, readBlockDevice(sysRoot, name))
	}
	return devs
}

func readBlockDevice(sysRoot, name string) blockDevice {
	dir := filepath.Join(sysRoot, "block", name)
	queue := filepath.Join(dir, "queue")
	device := filepath.Join(dir, "device")
	active, all := parseScheduler(readTrimmed(filepath.Join(queue, "scheduler")))
	return blockDevice{
		Name:             name,
		SizeBytes:        readInt(filepath.Join(dir, "size")) * 512,
		Rotational:       readTrimmed(filepath.Join(queue, "rotational")) == "1",
		Scheduler:        active,
		Schedulers:       all,
		NrRequests:       int(readInt(filepath.Join(queue, "nr_requests"))),
		NrHwQueues:       countEntries(filepath.Join(dir, "mq")),
		LogicalBlockSize: int(readInt(filepath.Join(queue, "logical_block_size"))),
		MaxSectorsKB:     int(readInt(filepath.Join(queue, "max_sectors_kb"))),
		ReadAheadKB:      int(readInt(filepath.Join(queue, "read_ahead_kb"))),
		Model:            readTrimmed(filepath.Join(device, "model")),
		Vendor:           readTrimmed(filepath.Join(device, "vendor")),
		Driver:           linkBase(filepath.Join(device, "driver")),
		HostDriver:       scsiHostDriver(sysRoot, device),
	}
}

// parseScheduler splits queue/scheduler ("mq-deadline [none]") into the active scheduler
// and all listed ones. A single unbracketed entry is the active one.
func parseScheduler(line string) (string, []string) {
	active := ""
	all := []string{}
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			f = strings.Trim(f, "[]")
			active = f
		}
		all = append(all, f)
	}
	if active == "" && len(all) == 1 {
		active = all[0]
	}
	return active, all
}

// scsiHostDriver is the proc_name of the SCSI host above a disk's device, "" for a disk
// that is not on a SCSI host.
func scsiHostDriver(sysRoot, device string) string {
	resolved, err := filepath.EvalSymlinks(device)
	if err != nil {
		return ""
	}
	parts := strings.Split(resolved, string(filepath.Separator))
	for i := len(parts) - 1; i >= 0; i-- {
		if isSCSIHostName(parts[i]) {
			return readTrimmed(filepath.Join(sysRoot, "class", "scsi_host", parts[i], "proc_name"))
		}
	}
	return ""
}

func isSCSIHostName(s string) bool {
	digits := strings.TrimPrefix(s, "host")
	if digits == s || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
