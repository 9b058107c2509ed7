package controlplane

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBody: a body is read whole up to the limit, whether its size is
// announced or not, and refused past it; a body shorter than announced is
// refused.
func TestReadBody(t *testing.T) {
	t.Parallel()
	type read struct {
		b       []byte
		refused bool
	}
	reads := make(chan read, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, aerr := readBody(w, r, 16)
		reads <- read{b, aerr != nil}
	}))
	defer srv.Close()
	post := func(body io.Reader, size int64) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, body)
		req.ContentLength = size
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, c := range []struct {
		name    string
		body    string
		size    int64 // -1: not announced (chunked)
		refused bool
	}{
		{"announced", "0123456789", 10, false},
		{"announced at the limit", strings.Repeat("x", 16), 16, false},
		{"announced empty", "", 0, false},
		{"announced over the limit", strings.Repeat("x", 17), 17, true},
		{"chunked", "0123456789", -1, false},
		{"chunked over the limit", strings.Repeat("x", 40), -1, true},
	} {
		var body io.Reader = strings.NewReader(c.body)
		if c.size < 0 {
			body = io.MultiReader(body) // no size for net/http to announce
		}
		post(body, c.size)
		r := <-reads
		if got, refused := r.b, r.refused; refused != c.refused || (!c.refused && !bytes.Equal(got, []byte(c.body))) {
			t.Errorf("%s: got %q refused %v", c.name, got, refused)
		}
	}
	// A client that announces more than it sends: the connection ends early.
	conn, err := (&net.Dialer{}).Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
	conn.(*net.TCPConn).CloseWrite()
	io.ReadAll(conn)
	conn.Close()
	if r := <-reads; !r.refused {
		t.Error("a body shorter than announced was taken")
	}
}

// TestReadBodyAllocatesWhatArrives: a body announced large costs the server
// memory only for what is sent — an unauthenticated client announcing the
// limit on many connections must not hold that much per connection.
func TestReadBodyAllocatesWhatArrives(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/v1/intents", strings.NewReader(`{"intent":1}`))
	r.ContentLength = 2 << 20
	b, aerr := readBody(httptest.NewRecorder(), r, 4<<20)
	if aerr != nil || string(b) != `{"intent":1}` {
		t.Fatalf("got %q %v", b, aerr)
	}
	if cap(b) > 64<<10+1 {
		t.Fatalf("announcing 2 MiB made the server allocate %d bytes for 12", cap(b))
	}
}
