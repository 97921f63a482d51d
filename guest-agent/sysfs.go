package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Readers for small procfs and sysfs files. A missing or unreadable file yields the zero
// value: the kernel under test decides which files exist.

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func readInt(path string) int64 {
	n, err := strconv.ParseInt(readTrimmed(path), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func countEntries(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	return len(entries)
}

// linkBase is the last element of a symlink's target, "" if path is no symlink.
func linkBase(path string) string {
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}
