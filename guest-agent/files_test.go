package main

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPutThenGetRoundTripsBinaryData(t *testing.T) {
	data := make([]byte, 1<<20+256)
	rand.Read(data)
	for i := 0; i < 256; i++ {
		data[i] = byte(i)
	}
	path := filepath.Join(t.TempDir(), "blob")
	c := startServer(t, newTestServer())
	var put putResult
	c.call(map[string]interface{}{"id": 1, "op": "put", "path": path, "data_b64": data}, &put)
	if put.Size != len(data) {
		t.Fatalf("put size %d, want %d", put.Size, len(data))
	}
	var got getResult
	c.call(map[string]interface{}{"id": 2, "op": "get", "path": path}, &got)
	if got.Size != len(data) || !bytes.Equal(got.DataB64, data) {
		t.Fatalf("get returned %d bytes (size %d), want the %d put", len(got.DataB64), got.Size, len(data))
	}
}

func TestPutCreatesParentDirectoriesAndDefaultsToMode0644(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "file")
	c := startServer(t, newTestServer())
	var put putResult
	c.call(map[string]interface{}{"id": 1, "op": "put", "path": path, "data_b64": "aGk="}, &put)
	assertFile(t, path, "hi", 0o644)
}

func TestPutAppliesTheGivenModeRegardlessOfUmask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tool")
	if err := putFile(path, []byte("#!/bin/sh\n"), 0o777); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "#!/bin/sh\n", 0o777)
}

func TestPutReplacesAnExistingFileAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := putFile(path, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "new", 0o640)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(entries))
	}
}

func TestPutOfEmptyDataCreatesAnEmptyFileAndGetReturnsAnEmptyString(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty")
	c := startServer(t, newTestServer())
	var put putResult
	c.call(map[string]interface{}{"id": 1, "op": "put", "path": path, "data_b64": ""}, &put)
	c.send(`{"id": 2, "op": "get", "path": "` + path + `"}`)
	resp := c.recv()
	if want := `{"data_b64":"","size":0}`; string(resp.Result) != want {
		t.Fatalf("get result %s, want %s", resp.Result, want)
	}
}

func TestPutAndGetRejectBadRequests(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, newTestServer())
	requests := []string{
		`{"id": 1, "op": "put", "path": "` + dir + `/x"}`,
		`{"id": 2, "op": "put", "path": "relative/x", "data_b64": ""}`,
		`{"id": 3, "op": "put", "path": "` + dir + `/x", "data_b64": "", "mode": 65535}`,
		`{"id": 4, "op": "get", "path": "` + dir + `/missing"}`,
		`{"id": 5, "op": "get", "path": "relative"}`,
	}
	for _, req := range requests {
		c.send(req)
		resp := c.recv()
		if resp.OK || resp.Error == "" {
			t.Errorf("%s: got %+v", req, resp)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a rejected put created the file: %v", err)
	}
}

func TestGetReadsProcFilesWhoseStatSizeIsZero(t *testing.T) {
	res, _, err := opGet(nil, []byte(`{"path": "/proc/version"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(*getResult); !strings.HasPrefix(string(got.DataB64), "Linux version") || got.Size != len(got.DataB64) {
		t.Fatalf("got %+v", got)
	}
}

func assertFile(t *testing.T, path, contents string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != perm {
		t.Errorf("%s has mode %o, want %o", path, fi.Mode().Perm(), perm)
	}
	if data, _ := os.ReadFile(path); string(data) != contents {
		t.Errorf("%s holds %q, want %q", path, data, contents)
	}
}
