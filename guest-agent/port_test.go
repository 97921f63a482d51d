package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPortNameDefaultsAndHonoursTheKernelCmdline(t *testing.T) {
	cases := map[string]string{
		"console=ttyS0 quiet":                              defaultPortName,
		"console=ttyS0 vmbisect.port=org.example.p1 quiet": "org.example.p1",
		"vmbisect.port=a vmbisect.port=b":                  "b",
	}
	for cmdline, want := range cases {
		if got := portName(cmdline); got != want {
			t.Errorf("portName(%q) = %q, want %q", cmdline, got, want)
		}
	}
}

// fakePorts makes a sysfs class dir and a dev dir holding the given vport entries.
func fakePorts(t *testing.T, names map[string]string, nodes ...string) (string, string) {
	t.Helper()
	classDir, devDir := t.TempDir(), t.TempDir()
	for vport, name := range names {
		if err := os.MkdirAll(filepath.Join(classDir, vport), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(classDir, vport, "name"), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		if err := os.WriteFile(filepath.Join(devDir, node), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return classDir, devDir
}

func TestFindPortMatchesTheNameAndNeedsTheDeviceNode(t *testing.T) {
	names := map[string]string{"vport1p1": "org.qemu.guest_agent.0", "vport1p2": defaultPortName}
	classDir, devDir := fakePorts(t, names, "vport1p1", "vport1p2")
	if dev, ok := findPort(classDir, devDir, defaultPortName); !ok || dev != filepath.Join(devDir, "vport1p2") {
		t.Fatalf("got %q, %v", dev, ok)
	}
	classDir, devDir = fakePorts(t, names, "vport1p1")
	if dev, ok := findPort(classDir, devDir, defaultPortName); ok {
		t.Fatalf("found %q without its device node", dev)
	}
}

func TestWaitForPortSeesAPortThatAppearsLate(t *testing.T) {
	classDir, devDir := fakePorts(t, nil)
	go func() {
		time.Sleep(200 * time.Millisecond)
		os.WriteFile(filepath.Join(devDir, "vport0p1"), nil, 0o600)
		os.MkdirAll(filepath.Join(classDir, "vport0p1"), 0o755)
		os.WriteFile(filepath.Join(classDir, "vport0p1", "name"), []byte(defaultPortName+"\n"), 0o644)
	}()
	dev, err := waitForPort(classDir, devDir, defaultPortName, 5*time.Second, 10*time.Millisecond)
	if err != nil || dev != filepath.Join(devDir, "vport0p1") {
		t.Fatalf("got %q, %v", dev, err)
	}
}

func TestWaitForPortGivesUpAfterItsTimeout(t *testing.T) {
	classDir, devDir := fakePorts(t, nil)
	start := time.Now()
	_, err := waitForPort(classDir, devDir, "org.example.never", 100*time.Millisecond, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "org.example.never") {
		t.Fatalf("got %v", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("gave up after %v", elapsed)
	}
}
