package main

import (
	"errors"
	"syscall"
	"testing"
)

func loopbackFlags(t *testing.T) uint16 {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var ifr ifreqFlags
	copy(ifr.name[:], "lo")
	if err := ifreqIoctl(fd, syscall.SIOCGIFFLAGS, &ifr); err != nil {
		t.Fatal(err)
	}
	return ifr.flags
}

// Only run where lo is up already, so that the test changes nothing on the host.
func TestBringUpLoopbackLeavesLoUp(t *testing.T) {
	if loopbackFlags(t)&syscall.IFF_UP == 0 {
		t.Skip("lo is down on this host")
	}
	if err := bringUpLoopback(); errors.Is(err, syscall.EPERM) {
		t.Skip("no CAP_NET_ADMIN")
	} else if err != nil {
		t.Fatal(err)
	}
	if loopbackFlags(t)&syscall.IFF_UP == 0 {
		t.Fatal("lo is down")
	}
}
