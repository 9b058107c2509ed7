// Command testtool is the tool the sandboxtest conformance suite runs in
// every tier, built for the host and for wasip1. Its parameters, JSON on
// stdin, say what to do: {"op":"echo"}, {"op":"exit","code":3}, ...
package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/writhq/writ/internal/jsonx"
)

type params struct {
	Op    string `json:"op"`
	Code  int    `json:"code"`
	Bytes int64  `json:"bytes"`
	MS    int    `json:"ms"`
	Path  string `json:"path"`
	Data  string `json:"data"`
	Msg   string `json:"msg"`
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	var p params
	if err := json.Unmarshal(in, &p); err != nil {
		fail("params: %v", err)
	}
	switch p.Op {
	case "echo":
		os.Stdout.Write(in)
	case "exit":
		fmt.Fprint(os.Stderr, p.Msg)
		os.Exit(p.Code)
	case "argv":
		b, _ := jsonx.Marshal(os.Args[1:])
		os.Stdout.Write(b)
	case "flood":
		flood(p.Bytes)
	case "sleep":
		time.Sleep(time.Duration(p.MS) * time.Millisecond)
	case "waitfor":
		// Runs until the file at path exists (a test makes it once it has
		// seen what it looks for while the tool runs), at most ms.
		for end := time.Now().Add(time.Duration(p.MS) * time.Millisecond); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(p.Path); err == nil {
				break
			}
			if time.Now().After(end) {
				fail("waitfor: %s did not appear in %d ms", p.Path, p.MS)
			}
		}
	case "spin":
		for i := 0; ; i++ {
			if i < 0 {
				fmt.Print(i)
			}
		}
	case "env":
		env := os.Environ()
		sort.Strings(env)
		fmt.Print(strings.Join(env, "\n"))
	case "cwd":
		wd, err := os.Getwd()
		if err != nil {
			fail("getwd: %v", err)
		}
		fmt.Print(wd)
	case "write":
		if err := os.WriteFile(p.Path, []byte(p.Data), 0o644); err != nil {
			fail("write: %v", err)
		}
	case "read":
		b, err := os.ReadFile(p.Path)
		if err != nil {
			fail("read: %v", err)
		}
		os.Stdout.Write(b)
	case "symlink":
		// Plant a link in the workspace pointing at Data, then read through it.
		os.Remove(p.Path)
		if err := os.Symlink(p.Data, p.Path); err != nil {
			fail("symlink: %v", err)
		}
		b, err := os.ReadFile(p.Path)
		if err != nil {
			fail("read through link: %v", err)
		}
		os.Stdout.Write(b)
	case "race":
		// Read path Bytes times; report anything that is not "safe", and
		// how many reads saw "safe" and how many failed (the path was a
		// link the sandbox did not follow), so that a caller knows both
		// states were seen.
		// With Data set, the tool flips path itself between a file and a
		// link to Data meanwhile: in a tier whose tool works on a private
		// copy of its workspace nothing outside can.
		stop := make(chan struct{})
		flipped := make(chan struct{})
		if p.Data != "" {
			go flip(p.Path, p.Data, stop, flipped)
		} else {
			close(flipped)
		}
		leaks, safe, failed := 0, 0, 0
		for i := int64(0); i < p.Bytes; i++ {
			b, err := os.ReadFile(p.Path)
			switch {
			case err != nil:
				failed++
			case string(b) == "safe":
				safe++
			default:
				leaks++
				if leaks == 1 {
					fmt.Printf("LEAK:%q\n", b)
				}
			}
		}
		close(stop)
		<-flipped
		fmt.Printf("leaks=%d safe=%d failed=%d", leaks, safe, failed)
	case "connect":
		c, err := net.DialTimeout("tcp", p.Data, 2*time.Second)
		if err != nil {
			fail("connect: %v", err)
		}
		c.Close()
		fmt.Print("connected")
	case "fetch":
		fetch(p.Data, p.Path)
	case "sni":
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", p.Path,
			&tls.Config{ServerName: p.Data, InsecureSkipVerify: true})
		if err != nil {
			fail("sni: %v", err)
		}
		get(c, p.Data)
	case "tty":
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			fail("no tty: %v", err)
		}
		f.Close()
		fmt.Print("tty open")
	case "setuid":
		// Leave a file with the setuid and setgid bits set (on one's own
		// file an unprivileged owner may) and report its mode.
		if err := os.WriteFile(p.Path, []byte("#"), 0o755); err != nil {
			fail("setuid: %v", err)
		}
		if err := os.Chmod(p.Path, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
			fail("setuid: %v", err)
		}
		fi, err := os.Stat(p.Path)
		if err != nil {
			fail("setuid: %v", err)
		}
		fmt.Printf("%v", fi.Mode())
	case "fill":
		// Write Bytes into Path in 1 MiB steps, going on past errors
		// (a tool that ignores ENOSPC), and report how far it got.
		chunk := make([]byte, 1<<20)
		f, err := os.Create(p.Path)
		if err != nil {
			fail("fill: %v", err)
		}
		var wrote int64
		var last error
		for n := int64(0); n < p.Bytes; n += int64(len(chunk)) {
			k, err := f.Write(chunk)
			wrote += int64(k)
			if err != nil {
				last = err
			}
		}
		f.Close()
		fmt.Printf("wrote=%d err=%v", wrote, last)
		if last != nil {
			os.Exit(1)
		}
	case "alloc":
		// Allocate and touch Bytes in 8 MiB chunks, all kept, writing one
		// "." per chunk: the output says how far the tool got.
		var kept [][]byte
		for n := int64(0); n < p.Bytes; n += 8 << 20 {
			c := make([]byte, 8<<20)
			for i := 0; i < len(c); i += 4096 {
				c[i] = 1
			}
			kept = append(kept, c)
			os.Stdout.Write([]byte("."))
		}
		fmt.Print(len(kept))
	default:
		if !platformOp(p) {
			fail("unknown op %q", p.Op)
		}
	}
}

// flood writes n bytes of 'x' in one write when it can, forever if n < 0.
func flood(n int64) {
	chunk := make([]byte, 1<<16)
	for i := range chunk {
		chunk[i] = 'x'
	}
	if n >= 0 && n <= int64(len(chunk)) {
		os.Stdout.Write(chunk[:n])
		return
	}
	for n < 0 || n > 0 {
		c := chunk
		if n > 0 && n < int64(len(c)) {
			c = c[:n]
		}
		if _, err := os.Stdout.Write(c); err != nil {
			os.Exit(9)
		}
		if n > 0 {
			n -= int64(len(c))
		}
	}
}

// fetch asks the proxy of $HTTPS_PROXY for a tunnel to target (CONNECT),
// then speaks TLS and HTTP through it and prints the body.
func fetch(target, serverName string) {
	proxy := strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")
	if proxy == "" {
		fail("fetch: no HTTPS_PROXY")
	}
	c, err := net.DialTimeout("tcp", proxy, 3*time.Second)
	if err != nil {
		fail("fetch: proxy: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	head, _ := br.ReadString('\n')
	for {
		l, err := br.ReadString('\n')
		if err != nil || l == "\r\n" {
			break
		}
		head += l
	}
	if !strings.HasPrefix(head, "HTTP/1.1 200 ") {
		fail("fetch: proxy said %q", head)
	}
	host, _, _ := net.SplitHostPort(target)
	if serverName == "" {
		serverName = host
	}
	get(tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}), host)
}

// get sends GET / on c and prints the response body.
func get(c net.Conn, host string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if tc, ok := c.(*tls.Conn); ok {
		// A handshake cut short reads as io.EOF, which ReadAll takes
		// for an empty answer.
		if err := tc.Handshake(); err != nil {
			fail("get: TLS handshake: %v", err)
		}
	}
	fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", host)
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		fail("get: %v", err)
	}
	_, body, _ := strings.Cut(string(b), "\r\n\r\n")
	fmt.Print(body)
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format, a...)
	os.Exit(1)
}

// flip swaps path between a regular file holding "safe" and a symbolic
// link to target until stop is closed, then closes done.
func flip(path, target string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		tmp := fmt.Sprintf("%s.swap%d", path, i%2)
		os.Remove(tmp)
		if i%2 == 0 {
			os.Symlink(target, tmp)
		} else {
			os.WriteFile(tmp, []byte("safe"), 0o644)
		}
		os.Rename(tmp, path)
	}
}
