// Command record runs a file of cases (package transcript) against
// redis-server with a RedisBloom module and writes the transcript of its
// replies, which bloomery's tests replay:
//
//	go run ./internal/transcript/record -module /path/to/redisbloom.so \
//	    -o server/testdata/redisbloom/bf.transcript server/testdata/redisbloom/bf.cases
//
// It starts redis-server (from PATH, or -redis-server) on a free loopback
// port in a temporary directory, without persistence, and stops it at the
// end; -addr records from a server that is already running instead.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomery/bloom/internal/transcript"
)

func main() {
	module := flag.String("module", os.Getenv("BLOOMERY_REDISBLOOM"), "RedisBloom module to load (default $BLOOMERY_REDISBLOOM)")
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	addr := flag.String("addr", "", "record from this running server instead of starting one")
	out := flag.String("o", "", "transcript to write (default: standard output)")
	flag.Parse()
	if flag.NArg() != 1 || (*module == "" && *addr == "") {
		fmt.Fprintln(os.Stderr, "usage: record -module redisbloom.so [-o out] cases-file")
		os.Exit(2)
	}
	if err := run(*module, *server, *addr, *out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

func run(module, server, addr, out, in string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	cases, err := transcript.Parse(f)
	f.Close()
	if err != nil {
		return err
	}
	if addr == "" {
		stop, a, err := start(server, module)
		if err != nil {
			return err
		}
		defer stop()
		addr = a
	}
	version, err := describe(addr)
	if err != nil {
		return err
	}
	if err := transcript.Record(addr, cases); err != nil {
		return err
	}
	header := fmt.Sprintf("Recorded by internal/transcript/record from %s\n%s\non %s. Do not edit: edit %s and record again.",
		in, version, time.Now().UTC().Format("2006-01-02"), filepath.Base(in))
	var b bytes.Buffer
	if err := transcript.Write(&b, header, cases); err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// start runs redis-server with the module on a free port.
func start(server, module string) (stop func(), addr string, err error) {
	dir, err := os.MkdirTemp("", "record-")
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--loadmodule", module)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := describe(addr); err == nil {
			return stop, addr, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	return nil, "", fmt.Errorf("redis-server with %s did not answer", module)
}

// describe names the server and its modules, for the header.
func describe(addr string) (string, error) {
	c := &transcript.Case{Name: "describe"}
	for _, args := range [][]string{{"INFO", "server"}, {"MODULE", "LIST"}} {
		cmd := &transcript.Cmd{Replies: map[int][]byte{}}
		for _, a := range args {
			cmd.Args = append(cmd.Args, transcript.Arg{Lit: []byte(a)})
		}
		c.Cmds = append(c.Cmds, cmd)
	}
	replies, err := transcript.Run(addr, 2, c)
	if err != nil {
		return "", err
	}
	version := "redis-server"
	for _, line := range strings.Split(string(replies[0].Value), "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			version += " " + v
		}
	}
	for _, m := range replies[1].Elems {
		f := m.Elems
		for i := 0; i+1 < len(f); i += 2 {
			switch string(f[i].Value) {
			case "name":
				version += ", module " + string(f[i+1].Value)
			case "ver":
				version += " version " + string(f[i+1].Value)
			}
		}
	}
	return version, nil
}
