package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
)

// opHandler runs one op on the raw request line. A non-nil after runs once the response has
// been written.
type opHandler func(s *server, line []byte) (result interface{}, after func(), err error)

var ops = map[string]opHandler{
	"hello":    opHello,
	"exec":     opExec,
	"snapshot": opSnapshot,
	"put":      opPut,
	"get":      opGet,
	"shutdown": opShutdown,
}

type server struct {
	moduleErrors []string
	// shutdown runs after the shutdown op's reply is written; it does not return.
	shutdown func(reboot bool)
}

// session is one stream of requests; its responses share one writer.
type session struct {
	mu       sync.Mutex
	w        io.Writer
	inFlight sync.WaitGroup
}

// serve reads requests from r until it ends, handling each in its own goroutine and answering
// on w. It returns when reading ends, without waiting for requests still running; a clean end
// of input returns a nil error.
func (s *server) serve(r io.Reader, w io.Writer) (*session, error) {
	sess := &session{w: w}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := readLine(br, maxLineBytes)
		if err == errLineTooLong {
			sess.send(errResponse(0, badRequest(err)))
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			sess.inFlight.Add(1)
			go s.handle(sess, line)
		}
		if err == io.EOF {
			return sess, nil
		}
		if err != nil {
			return sess, err
		}
	}
}

func (s *server) handle(sess *session, line []byte) {
	defer sess.inFlight.Done()
	id, op, err := decodeEnvelope(line)
	if err != nil {
		sess.send(errResponse(id, err))
		return
	}
	h, ok := ops[op]
	if !ok {
		sess.send(errResponse(id, fmt.Errorf("unknown op %q", op)))
		return
	}
	result, after, err := s.run(h, line)
	if err != nil {
		sess.send(errResponse(id, err))
		return
	}
	sess.send(okResponse(id, result))
	if after != nil {
		after()
	}
}

// run calls h, turning a panic into an error so that one bad request cannot kill the agent.
func (s *server) run(h opHandler, line []byte) (result interface{}, after func(), err error) {
	defer func() {
		if p := recover(); p != nil {
			result, after, err = nil, nil, fmt.Errorf("internal error: %v", p)
		}
	}()
	return h(s, line)
}

func (sess *session) send(resp response) {
	line, err := encodeResponse(resp)
	if err != nil {
		line, _ = encodeResponse(errResponse(resp.ID, fmt.Errorf("encoding response: %v", err)))
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if _, err := sess.w.Write(line); err != nil {
		logger.Printf("writing response to request %d: %v", resp.ID, err)
	}
}

// wait blocks until every request read so far has been answered.
func (sess *session) wait() {
	sess.inFlight.Wait()
}

type shutdownRequest struct {
	Reboot bool `json:"reboot"`
}

func opShutdown(s *server, line []byte) (interface{}, func(), error) {
	var req shutdownRequest
	if err := decodeOp(line, &req); err != nil {
		return nil, nil, err
	}
	return struct{}{}, func() { s.shutdown(req.Reboot) }, nil
}
