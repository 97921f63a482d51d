package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// FuzzRequestDecoding feeds arbitrary request lines to the decoding a request goes through
// before any op runs: the envelope, every op's own fields, and the error response. Whatever
// the line, nothing panics and the answer is one JSON line carrying the request's id.
// Seeds: testdata/fuzz/FuzzRequestDecoding; `go test` replays them, `make reliability` fuzzes.
func FuzzRequestDecoding(f *testing.F) {
	f.Add([]byte(`{"id":1,"op":"exec","argv":["true"],"timeout_s":5}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		id, op, err := decodeEnvelope(line)
		if err == nil {
			if _, known := ops[op]; !known {
				checkOneLine(t, errResponse(id, fmt.Errorf("unknown op %q", op)), id)
			}
			for _, fields := range []interface{}{&execRequest{}, &putRequest{}, &getRequest{}, &shutdownRequest{}} {
				if err := decodeOp(line, fields); err != nil {
					checkOneLine(t, errResponse(id, err), id)
				}
			}
			return
		}
		checkOneLine(t, errResponse(id, err), id)
	})
}

func checkOneLine(t *testing.T, resp response, id int64) {
	t.Helper()
	out, err := encodeResponse(resp)
	if err != nil {
		t.Fatalf("error response does not encode: %v", err)
	}
	if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
		t.Fatalf("error response is not one line: %q", out)
	}
	var back response
	if err := json.Unmarshal(out, &back); err != nil || back.ID != id || back.OK {
		t.Fatalf("error response %q decodes to %+v, %v", out, back, err)
	}
}
