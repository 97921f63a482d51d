package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func TestMalformedLineGetsAnErrorWithIDZeroAndServingContinues(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send(`{"id": 1, "op": `)
	resp := c.recv()
	if resp.ID != 0 || resp.OK || !strings.HasPrefix(resp.Error, "bad request: ") {
		t.Fatalf("malformed line: %+v", resp)
	}
	var hello helloResult
	c.call(map[string]interface{}{"id": 2, "op": "hello"}, &hello)
}

func TestUnknownOpGetsAnErrorResponse(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send(`{"id": 5, "op": "frobnicate"}`)
	resp := c.recv()
	if resp.ID != 5 || resp.OK || resp.Error != `unknown op "frobnicate"` {
		t.Fatalf("got %+v", resp)
	}
	var hello helloResult
	c.call(map[string]interface{}{"id": 6, "op": "hello"}, &hello)
}

func TestFieldOfTheWrongTypeGetsABadRequestWithTheRequestID(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send(`{"id": 8, "op": "exec", "argv": "ls"}`)
	resp := c.recv()
	if resp.ID != 8 || resp.OK || !strings.HasPrefix(resp.Error, "bad request: ") {
		t.Fatalf("got %+v", resp)
	}
}

func TestBlankLinesAreIgnored(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send("")
	c.send("  \r")
	c.send(`{"id": 1, "op": "hello"}`)
	if resp := c.recv(); resp.ID != 1 || !resp.OK {
		t.Fatalf("got %+v", resp)
	}
}

func TestRequestsRunConcurrently(t *testing.T) {
	c := startServer(t, newTestServer())
	c.send(`{"id": 1, "op": "exec", "argv": ["sleep", "1"]}`)
	c.send(`{"id": 2, "op": "hello"}`)
	first, second := c.recv(), c.recv()
	if first.ID != 2 || second.ID != 1 || !first.OK || !second.OK {
		t.Fatalf("want hello (2) answered before the sleeping exec (1), got %+v then %+v", first, second)
	}
}

func TestShutdownRepliesBeforeShuttingDown(t *testing.T) {
	calls := make(chan bool, 1)
	srv := &server{moduleErrors: []string{}, shutdown: func(reboot bool) { calls <- reboot }}
	c := startServer(t, srv)
	c.send(`{"id": 3, "op": "shutdown", "reboot": true}`)
	line := c.recvLine()
	if want := `{"id":3,"ok":true,"result":{}}` + "\n"; string(line) != want {
		t.Fatalf("got %q, want %q", line, want)
	}
	select {
	case reboot := <-calls:
		if !reboot {
			t.Fatal("shutdown called without reboot")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown never called")
	}
}

func TestPanicInAnOpGivesAnErrorResponseInsteadOfACrash(t *testing.T) {
	ops["test-panic"] = func(*server, []byte) (interface{}, func(), error) { panic("boom") }
	defer delete(ops, "test-panic")
	c := startServer(t, newTestServer())
	c.send(`{"id": 4, "op": "test-panic"}`)
	resp := c.recv()
	if resp.ID != 4 || resp.OK || resp.Error != "internal error: boom" {
		t.Fatalf("got %+v", resp)
	}
}

func TestOverlongLineGetsAnErrorWithIDZero(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a 256 MiB line")
	}
	c := startServer(t, newTestServer())
	line := `{"id": 1, "op": "put", "path": "/nonexistent/x", "data_b64": "` + strings.Repeat("A", maxLineBytes) + `"}` + "\n"
	go io.WriteString(c.requests, line)
	resp := c.recv()
	if resp.ID != 0 || resp.OK || !strings.Contains(resp.Error, "longer than 256 MiB") {
		t.Fatalf("got %+v", resp)
	}
}

func TestResponsesOfConcurrentRequestsNeverInterleave(t *testing.T) {
	c := startServer(t, newTestServer())
	const n = 20
	for i := 1; i <= n; i++ {
		c.sendJSON(map[string]interface{}{"id": i, "op": "exec", "argv": []string{"head", "-c", "300000", "/dev/zero"}})
	}
	seen := map[int64]bool{}
	for i := 0; i < n; i++ {
		resp := c.recv()
		var res execResult
		if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.StdoutB64) != 300000 {
			t.Fatalf("response %d: %v, %d bytes", resp.ID, err, len(res.StdoutB64))
		}
		seen[resp.ID] = true
	}
	if len(seen) != n {
		t.Fatalf("got %d distinct ids, want %d", len(seen), n)
	}
}
