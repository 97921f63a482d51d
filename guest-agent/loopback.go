package main

import (
	"fmt"
	"syscall"
	"unsafe"
)

// ifreqFlags is struct ifreq of <net/if.h> with the ifr_flags member of its union.
type ifreqFlags struct {
	name  [syscall.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

// bringUpLoopback sets IFF_UP on lo; network workloads such as netperf run over it.
func bringUpLoopback() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	var ifr ifreqFlags
	copy(ifr.name[:], "lo")
	if err := ifreqIoctl(fd, syscall.SIOCGIFFLAGS, &ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.flags |= syscall.IFF_UP
	if err := ifreqIoctl(fd, syscall.SIOCSIFFLAGS, &ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}

func ifreqIoctl(fd int, request uintptr, ifr *ifreqFlags) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), request, uintptr(unsafe.Pointer(ifr))); errno != 0 {
		return errno
	}
	return nil
}
