package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const defaultPutMode = 0o644

type putRequest struct {
	Path    string  `json:"path"`
	DataB64 []byte  `json:"data_b64"`
	Mode    *uint32 `json:"mode"`
}

type putResult struct {
	Size int `json:"size"`
}

type getRequest struct {
	Path string `json:"path"`
}

type getResult struct {
	DataB64 []byte `json:"data_b64"`
	Size    int    `json:"size"`
}

func opPut(_ *server, line []byte) (interface{}, func(), error) {
	var req putRequest
	if err := decodeOp(line, &req); err != nil {
		return nil, nil, err
	}
	if req.DataB64 == nil {
		return nil, nil, errors.New("data_b64 is required")
	}
	mode := uint32(defaultPutMode)
	if req.Mode != nil {
		mode = *req.Mode
	}
	if err := putFile(req.Path, req.DataB64, mode); err != nil {
		return nil, nil, err
	}
	return &putResult{Size: len(req.DataB64)}, nil, nil
}

func opGet(_ *server, line []byte) (interface{}, func(), error) {
	var req getRequest
	if err := decodeOp(line, &req); err != nil {
		return nil, nil, err
	}
	if !filepath.IsAbs(req.Path) {
		return nil, nil, fmt.Errorf("path must be absolute, got %q", req.Path)
	}
	data, err := os.ReadFile(req.Path)
	if err != nil {
		return nil, nil, err
	}
	return &getResult{DataB64: nonNil(data), Size: len(data)}, nil, nil
}

// putFile writes data to path atomically: a temporary file in the same directory, given its
// mode and synced, is renamed over path. Missing parent directories are created.
func putFile(path string, data []byte, mode uint32) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("path must be absolute, got %q", path)
	}
	if mode > 0o7777 {
		return fmt.Errorf("mode %#o is not a permission mode", mode)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".put-*")
	if err != nil {
		return err
	}
	err = writeAndSync(tmp, data, mode)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func writeAndSync(f *os.File, data []byte, mode uint32) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	// Fchmod takes the mode as given, untouched by the umask and including setuid bits.
	if err := syscall.Fchmod(int(f.Fd()), mode); err != nil {
		return &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return f.Sync()
}
