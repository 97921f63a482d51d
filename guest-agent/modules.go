package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// loadModules loads the kernel modules listed in listPath, one absolute path per line in
// dependency order, and returns one message per failure. A missing list means no modules.
func loadModules(listPath string) []string {
	failures := []string{}
	paths, err := readModuleList(listPath)
	if os.IsNotExist(err) {
		return failures
	}
	if err != nil {
		logger.Print(err)
		return append(failures, err.Error())
	}
	for _, path := range paths {
		if err := loadModule(path); err != nil {
			logger.Print(err)
			failures = append(failures, err.Error())
		}
	}
	logger.Printf("modules loaded %d/%d", len(paths)-len(failures), len(paths))
	return failures
}

// readModuleList returns the non-blank lines of the list that are not # comments.
func readModuleList(listPath string) ([]string, error) {
	data, err := os.ReadFile(listPath)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			paths = append(paths, line)
		}
	}
	return paths, nil
}

// loadModule loads one uncompressed .ko with finit_module; an already loaded module is fine.
func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	noParams := [1]byte{}
	_, _, errno := syscall.Syscall(sysFinitModule, f.Fd(), uintptr(unsafe.Pointer(&noParams[0])), 0)
	if errno != 0 && errno != syscall.EEXIST {
		return fmt.Errorf("finit_module %s: %v", path, errno)
	}
	return nil
}
