// Command vmbisect-agent is the in-guest agent of vmbisect. As PID 1 of an initramfs it sets
// the guest up and serves the protocol of docs/agent-protocol.md on a virtio-serial port; as
// an ordinary program it serves the same protocol on stdio, a device or a unix socket.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
)

const agentVersion = "0.1.0"

// logger writes progress and errors; PID-1 mode points it at /dev/console.
var logger = log.New(os.Stderr, "vmbisect-agent: ", 0)

func main() {
	if os.Getpid() == 1 {
		// The kernel hands unknown cmdline words to init as arguments, so none are parsed.
		runInit()
	}
	os.Exit(runProgram(os.Args[1:], os.Stdout, os.Stderr))
}

// runProgram is ordinary mode: it parses the flags, serves, and returns the exit status.
func runProgram(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vmbisect-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stdio := fs.Bool("stdio", false, "serve the protocol on stdin/stdout")
	port := fs.String("port", "", "serve the protocol on this character device or file")
	listen := fs.String("listen", "", "listen on this unix socket and serve each connection in turn")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *version {
		fmt.Fprintf(stdout, "vmbisect-agent %s\n", agentVersion)
		return 0
	}
	modes := 0
	for _, chosen := range []bool{*stdio, *port != "", *listen != ""} {
		if chosen {
			modes++
		}
	}
	if modes != 1 || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "vmbisect-agent: give exactly one of -stdio, -port PATH, -listen PATH (or -version)")
		fs.Usage()
		return 2
	}

	srv := &server{moduleErrors: []string{}, shutdown: func(bool) { os.Exit(0) }}
	childReaper()
	var err error
	switch {
	case *stdio:
		err = serveOnce(srv, os.Stdin, os.Stdout)
	case *port != "":
		err = servePort(srv, *port)
	default:
		err = serveListen(srv, *listen)
	}
	if err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// serveOnce serves until r ends and every request read has been answered.
func serveOnce(srv *server, r io.Reader, w io.Writer) error {
	sess, err := srv.serve(r, w)
	sess.wait()
	return err
}

func servePort(srv *server, path string) error {
	f, err := openPort(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return serveOnce(srv, f, f)
}

// serveListen accepts connections on a unix socket and serves them one after another.
func serveListen(srv *server, path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	defer l.Close()
	for {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		if err := serveOnce(srv, conn, conn); err != nil {
			logger.Printf("connection: %v", err)
		}
		conn.Close()
	}
}
