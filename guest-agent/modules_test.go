package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadModuleListSkipsBlankLinesAndComments(t *testing.T) {
	list := filepath.Join(t.TempDir(), "modules")
	contents := "/lib/modules/a.ko\n\n  # a comment\n /lib/modules/b.ko \n"
	if err := os.WriteFile(list, []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readModuleList(list)
	if want := []string{"/lib/modules/a.ko", "/lib/modules/b.ko"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestLoadModulesRecordsEachFailureAndCarriesOn(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "modules")
	missing := []string{filepath.Join(dir, "first.ko"), filepath.Join(dir, "second.ko")}
	if err := os.WriteFile(list, []byte(strings.Join(missing, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	failures := loadModules(list)
	if len(failures) != 2 || !strings.Contains(failures[0], "first.ko") || !strings.Contains(failures[1], "second.ko") {
		t.Fatalf("got %q", failures)
	}
}

func TestLoadModulesWithoutAListLoadsNothing(t *testing.T) {
	failures := loadModules(filepath.Join(t.TempDir(), "absent"))
	if failures == nil || len(failures) != 0 {
		t.Fatalf("got %#v", failures)
	}
}
