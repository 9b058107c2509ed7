package tools

import (
	"errors"
	"strings"
	"testing"
)

const echoSpec = `{"name":"echo","description":"returns its params","input_schema":{"type":"object","properties":{"msg":{"type":"string","maxLength":10}},"required":["msg"],"additionalProperties":false},"manifest":{"tier":"wasm","name":"echo","module":"/var/lib/writ/tools/echo.wasm"}}`

func TestParseAndValidate(t *testing.T) {
	t.Parallel()
	tool, err := Parse([]byte(echoSpec))
	if err != nil {
		t.Fatal(err)
	}
	if tool.Tier != "wasm" || !strings.HasPrefix(tool.Hash, "sha256:") {
		t.Errorf("got tier %q hash %q", tool.Tier, tool.Hash)
	}
	if string(tool.Manifest) != `{"module":"/var/lib/writ/tools/echo.wasm","name":"echo","tier":"wasm"}` {
		t.Errorf("manifest not canonical: %s", tool.Manifest)
	}
	for params, ok := range map[string]bool{
		`{"msg":"hi"}`:           true,
		`{}`:                     false,
		`{"msg":1}`:              false,
		`{"msg":"far too long"}`: false,
		`{"msg":"hi","x":1}`:     false,
	} {
		err := tool.Validate([]byte(params))
		if (err == nil) != ok {
			t.Errorf("Validate(%s): got %v, want ok=%v", params, err, ok)
		}
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for name, spec := range map[string]string{
		"unknown member":   strings.Replace(echoSpec, `"description"`, `"descr"`, 1),
		"bad name":         strings.Replace(echoSpec, `"name":"echo","desc`, `"name":"Echo!","desc`, 1),
		"manifest name":    strings.Replace(echoSpec, `"name":"echo","module"`, `"name":"other","module"`, 1),
		"unknown tier":     strings.Replace(echoSpec, `"tier":"wasm"`, `"tier":"docker"`, 1),
		"bad schema":       strings.Replace(echoSpec, `"type":"object","properties"`, `"type":"objekt","properties"`, 1),
		"file ref":         strings.Replace(echoSpec, `{"type":"string","maxLength":10}`, `{"$ref":"file:///etc/passwd"}`, 1),
		"network ref":      strings.Replace(echoSpec, `{"type":"string","maxLength":10}`, `{"$ref":"http://127.0.0.1:1/s.json"}`, 1),
		"manifest missing": `{"name":"echo"}`,
	} {
		if _, err := Parse([]byte(spec)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}
