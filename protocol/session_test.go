package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := Hello{Node: "n1", Version: "v", OS: "linux", Arch: "amd64", Tiers: []string{"wasm"}, Tools: []ToolRef{{Name: "echo", Hash: "sha256:00"}}, Concurrency: 4}
	if err := WriteFrame(&buf, FrameHello, h); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, FrameHeartbeat, Heartbeat{InFlight: 2}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(&buf)
	if err != nil || f.Type != FrameHello {
		t.Fatalf("ReadFrame = %+v, %v", f, err)
	}
	var got Hello
	if err := f.DecodeBody(&got); err != nil {
		t.Fatal(err)
	}
	if got.Node != "n1" || got.Concurrency != 4 || len(got.Tools) != 1 || got.Tools[0].Name != "echo" {
		t.Fatalf("hello = %+v", got)
	}
	f, err = ReadFrame(&buf)
	if err != nil || f.Type != FrameHeartbeat {
		t.Fatalf("second frame = %+v, %v", f, err)
	}
	if _, err := ReadFrame(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestFrameRefusals(t *testing.T) {
	t.Parallel()
	frame := func(s string) *bytes.Reader {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(s)))
		return bytes.NewReader(append(b, s...))
	}
	for name, r := range map[string]io.Reader{
		"too large":      bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}),
		"truncated":      bytes.NewReader([]byte{0, 0, 0, 9, '{'}),
		"unknown member": frame(`{"type":"hello","body":{},"x":1}`),
		"no type":        frame(`{"body":{}}`),
		"array body":     frame(`{"type":"hello","body":[]}`),
		"duplicate":      frame(`{"type":"hello","type":"bye","body":{}}`),
	} {
		if _, err := ReadFrame(r); err == nil {
			t.Errorf("%s: ReadFrame accepted it", name)
		}
	}
	f, err := ReadFrame(frame(`{"type":"heartbeat","body":{"in_flight":1,"extra":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	var hb Heartbeat
	if err := f.DecodeBody(&hb); err == nil {
		t.Error("DecodeBody accepted an unknown member")
	}
}

func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, FrameAck, Ack{DispatchID: "d1"})
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := ReadFrame(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A frame that was read writes back and reads again the same.
		var out bytes.Buffer
		if err := WriteFrame(&out, fr.Type, fr.Body); err != nil {
			t.Fatalf("rewrite: %v", err)
		}
		again, err := ReadFrame(&out)
		if err != nil || again.Type != fr.Type {
			t.Fatalf("reread: %+v, %v", again, err)
		}
		var a Ack
		_ = fr.DecodeBody(&a)
	})
}
