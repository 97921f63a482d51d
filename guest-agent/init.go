package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	initPATH        = "/usr/sbin:/usr/bin:/sbin:/bin"
	consolePath     = "/dev/console"
	modulesListPath = "/etc/vmbisect/modules"
	portWaitTimeout = 30 * time.Second
	portPollEvery   = 50 * time.Millisecond
	// reopenDelay paces re-opening the port: while no host is connected, reads on a
	// virtio-serial port end at once.
	reopenDelay = 100 * time.Millisecond
)

type mountPoint struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}

var initMounts = []mountPoint{
	{"proc", "/proc", "proc", syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC, ""},
	{"sysfs", "/sys", "sysfs", syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC, ""},
	{"devtmpfs", "/dev", "devtmpfs", syscall.MS_NOSUID, "mode=0755"},
	{"devpts", "/dev/pts", "devpts", syscall.MS_NOSUID | syscall.MS_NOEXEC, "mode=0620,ptmxmode=0666"},
	{"tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV, "mode=1777"},
	{"tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV, "mode=1777"},
	{"tmpfs", "/run", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV, "mode=0755"},
}

// runInit is PID-1 mode. It never returns: PID 1 exiting panics the kernel.
func runInit() {
	defer func() {
		if p := recover(); p != nil {
			logger.Printf("fatal: %v", p)
			powerOff(false)
		}
	}()
	keepSignalsFromKilling()
	mountAll()
	useConsole()
	os.Setenv("PATH", initPATH)
	childReaper()
	if err := bringUpLoopback(); err != nil {
		logger.Printf("loopback: %v", err)
	}
	srv := &server{moduleErrors: loadModules(modulesListPath), shutdown: powerOff}

	name := portName(readTrimmed("/proc/cmdline"))
	dev, err := waitForPort(virtioPortsDir, "/dev", name, portWaitTimeout, portPollEvery)
	if err != nil {
		logger.Print(err)
		powerOff(false)
	}
	logger.Printf("serving on %s", dev)
	for {
		f, err := openPort(dev)
		if err != nil {
			logger.Print(err)
			time.Sleep(time.Second)
			continue
		}
		if _, err := srv.serve(f, f); err != nil {
			logger.Printf("reading %s: %v", dev, err)
		}
		f.Close()
		time.Sleep(reopenDelay)
	}
}

// keepSignalsFromKilling relays every signal to a channel nobody acts on. PID 1 receives
// only signals it handles, and the Go runtime's handlers exit on most of them. Unlike
// ignoring them, this leaves children starting with default dispositions.
func keepSignalsFromKilling() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	go func() {
		for range sigs {
		}
	}()
}

// mountAll mounts the API filesystems; one that is already mounted is fine, other failures
// are logged and the rest carry on.
func mountAll() {
	for _, m := range initMounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			logger.Printf("mkdir %s: %v", m.target, err)
			continue
		}
		if err := syscall.Mount(m.source, m.target, m.fstype, m.flags, m.data); err != nil && err != syscall.EBUSY {
			logger.Printf("mount %s on %s: %v", m.fstype, m.target, err)
		}
	}
}

// useConsole sends the log to /dev/console, which exists once devtmpfs is mounted.
func useConsole() {
	console, err := os.OpenFile(consolePath, os.O_WRONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		logger.Printf("open %s: %v", consolePath, err)
		return
	}
	logger.SetOutput(console)
}

// powerOff syncs, kills every other process and powers off (or reboots). It never returns.
func powerOff(reboot bool) {
	cmd, what := syscall.LINUX_REBOOT_CMD_POWER_OFF, "powering off"
	if reboot {
		cmd, what = syscall.LINUX_REBOOT_CMD_RESTART, "rebooting"
	}
	logger.Print(what)
	syscall.Sync()
	syscall.Kill(-1, syscall.SIGKILL)
	syscall.Sync()
	err := syscall.Reboot(cmd)
	logger.Printf("%s failed: %v", what, err)
	for {
		time.Sleep(time.Hour)
	}
}
