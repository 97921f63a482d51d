package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// maxLineBytes bounds one request line; longer lines are skipped and answered with an error.
const maxLineBytes = 256 << 20

var errLineTooLong = errors.New("line longer than 256 MiB")

// envelope holds the fields every request carries; the op's own fields are decoded separately.
type envelope struct {
	ID *int64 `json:"id"`
	Op string `json:"op"`
}

type response struct {
	ID     int64       `json:"id"`
	OK     bool        `json:"ok"`
	Result interface{} `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// decodeEnvelope returns the request's id (0 when it cannot be read) and op.
func decodeEnvelope(line []byte) (int64, string, error) {
	var env envelope
	err := json.Unmarshal(line, &env)
	var id int64
	if env.ID != nil {
		id = *env.ID
	}
	switch {
	case err != nil:
		return id, "", badRequest(err)
	case env.ID == nil:
		return 0, "", badRequest(errors.New("missing id"))
	case env.Op == "":
		return id, "", badRequest(errors.New("missing op"))
	}
	return id, env.Op, nil
}

// decodeOp decodes an op's own fields from the request line; unknown fields are ignored.
func decodeOp(line []byte, fields interface{}) error {
	if err := json.Unmarshal(line, fields); err != nil {
		return badRequest(err)
	}
	return nil
}

func badRequest(err error) error {
	return fmt.Errorf("bad request: %v", err)
}

func okResponse(id int64, result interface{}) response {
	return response{ID: id, OK: true, Result: result}
}

func errResponse(id int64, err error) response {
	return response{ID: id, OK: false, Error: oneLine(err.Error())}
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// encodeResponse renders resp as one JSON line ending in a newline.
func encodeResponse(resp response) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readLine returns the next line without its newline. At the end of input it returns the
// unterminated rest (possibly empty) with io.EOF. A line longer than max is consumed and
// reported as errLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return line[:len(line)-1], nil
		default:
			return line, err
		}
	}
}
