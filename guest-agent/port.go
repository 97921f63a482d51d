package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	virtioPortsDir  = "/sys/class/virtio-ports"
	defaultPortName = "org.vmbisect.agent.0"
	portNameParam   = "vmbisect.port="
)

// portName is the port named by the last vmbisect.port= on the kernel command line, or the
// default.
func portName(cmdline string) string {
	name := defaultPortName
	for _, word := range strings.Fields(cmdline) {
		if strings.HasPrefix(word, portNameParam) {
			name = strings.TrimPrefix(word, portNameParam)
		}
	}
	return name
}

// findPort returns the device node in devDir of the virtio-serial port called name, once
// both its classDir entry and its node exist.
func findPort(classDir, devDir, name string) (string, bool) {
	entries, err := os.ReadDir(classDir)
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if readTrimmed(filepath.Join(classDir, e.Name(), "name")) != name {
			continue
		}
		dev := filepath.Join(devDir, e.Name())
		if _, err := os.Stat(dev); err == nil {
			return dev, true
		}
	}
	return "", false
}

// waitForPort polls for the port: the virtio driver may probe after init has started.
func waitForPort(classDir, devDir, name string, timeout, every time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if dev, ok := findPort(classDir, devDir, name); ok {
			return dev, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("virtio-serial port %q did not appear within %v", name, timeout)
		}
		time.Sleep(every)
	}
}

// openPort opens a port for reading and writing in blocking mode. os.OpenFile would make a
// pollable virtio port non-blocking; a blocking write returns only once the host has taken
// the data, so the reply to shutdown leaves the guest before it powers off.
func openPort(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
