package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadLineSplitsLinesAndReturnsUnterminatedRestAtEOF(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("one\ntwo\nthree"))
	for _, want := range []string{"one", "two"} {
		line, err := readLine(r, 100)
		if err != nil || string(line) != want {
			t.Fatalf("got %q, %v; want %q", line, err, want)
		}
	}
	line, err := readLine(r, 100)
	if err != io.EOF || string(line) != "three" {
		t.Fatalf("got %q, %v; want \"three\", EOF", line, err)
	}
}

func TestReadLineJoinsLinesLongerThanTheReaderBuffer(t *testing.T) {
	long := strings.Repeat("x", 1000)
	r := bufio.NewReaderSize(strings.NewReader(long+"\nnext\n"), 16)
	line, err := readLine(r, 2000)
	if err != nil || string(line) != long {
		t.Fatalf("got %d bytes, %v; want %d bytes", len(line), err, len(long))
	}
	if line, _ := readLine(r, 2000); string(line) != "next" {
		t.Fatalf("line after the long one: %q", line)
	}
}

func TestReadLineSkipsAnOverlongLineAndKeepsReading(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("y", 100)+"\nfits\n"), 16)
	if _, err := readLine(r, 50); err != errLineTooLong {
		t.Fatalf("overlong line: err %v, want errLineTooLong", err)
	}
	if line, err := readLine(r, 50); err != nil || string(line) != "fits" {
		t.Fatalf("after overlong line: %q, %v", line, err)
	}
}

func TestReadLineAcceptsALineOfExactlyTheLimit(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("z", 50)+"\n"), 16)
	if line, err := readLine(r, 50); err != nil || len(line) != 50 {
		t.Fatalf("got %d bytes, %v", len(line), err)
	}
}

func TestDecodeEnvelopeOfMalformedJSONGivesIDZero(t *testing.T) {
	for _, line := range []string{`{"id": 5, "op": "hello"`, `not json`, `[1,2]`, `"hello"`} {
		id, _, err := decodeEnvelope([]byte(line))
		if err == nil || id != 0 || !strings.HasPrefix(err.Error(), "bad request: ") {
			t.Errorf("%s: got id %d, err %v", line, id, err)
		}
	}
}

func TestDecodeEnvelopeKeepsTheIDWhenOnlyTheOpHasTheWrongType(t *testing.T) {
	id, _, err := decodeEnvelope([]byte(`{"id": 7, "op": 5}`))
	if err == nil || id != 7 {
		t.Fatalf("got id %d, err %v", id, err)
	}
}

func TestDecodeEnvelopeRequiresAnIntegerIDAndAnOp(t *testing.T) {
	cases := map[string]int64{
		`{"op": "hello"}`:            0,
		`{"id": 1.5, "op": "hello"}`: 0,
		`{"id": "3", "op": "hello"}`: 0,
		`{"id": 4}`:                  4,
	}
	for line, wantID := range cases {
		id, _, err := decodeEnvelope([]byte(line))
		if err == nil || id != wantID {
			t.Errorf("%s: got id %d, err %v; want id %d and an error", line, id, err, wantID)
		}
	}
	id, op, err := decodeEnvelope([]byte(`{"id": 9007199254740993, "op": "get", "path": "/x"}`))
	if err != nil || id != 9007199254740993 || op != "get" {
		t.Fatalf("got %d %q %v", id, op, err)
	}
}

func TestEncodeResponseWritesOneLineWithOnlyTheFieldsOfItsKind(t *testing.T) {
	line, err := encodeResponse(errResponse(3, errors.New("first\nsecond\r\nthird")))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":3,"ok":false,"error":"first second third"}` + "\n"; string(line) != want {
		t.Fatalf("error response %q, want %q", line, want)
	}
	line, err = encodeResponse(okResponse(4, struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":4,"ok":true,"result":{}}` + "\n"; string(line) != want {
		t.Fatalf("ok response %q, want %q", line, want)
	}
}

func TestBinaryFieldsTravelAsStandardBase64WithPadding(t *testing.T) {
	encoded, err := json.Marshal(getResult{DataB64: []byte{0xfb, 0xff}, Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"data_b64":"+/8=","size":2}`; string(encoded) != want {
		t.Fatalf("got %s, want %s", encoded, want)
	}
	var req putRequest
	if err := decodeOp([]byte(`{"id":1,"op":"put","path":"/x","data_b64":"+/8="}`), &req); err != nil {
		t.Fatal(err)
	}
	if string(req.DataB64) != "\xfb\xff" {
		t.Fatalf("decoded %q", req.DataB64)
	}
}

func TestDecodeOpRejectsInvalidBase64AsABadRequest(t *testing.T) {
	var req putRequest
	err := decodeOp([]byte(`{"id":1,"op":"put","path":"/x","data_b64":"!!"}`), &req)
	if err == nil || !strings.HasPrefix(err.Error(), "bad request: ") {
		t.Fatalf("got %v", err)
	}
}
