// Package strictjson checks JSON documents for what encoding/json lets
// through silently: duplicate object keys, keys outside an allowed shape, and
// trailing data after the value.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Check walks data and fails on a duplicate key, on a key keyOK rejects (nil
// accepts all), on a syntax error, or on anything after the first value. It
// does not decode. Callers decoding into structs pass a keyOK that accepts
// only the exact spelling of their fields, because encoding/json would
// otherwise match "Name" and "NAME" to the field "name".
func Check(data []byte, keyOK func(string) bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := value(dec, keyOK, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

const maxDepth = 64

func value(dec *json.Decoder, keyOK func(string) bool, depth int) error {
	if depth > maxDepth {
		return errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("malformed JSON: %w", err)
			}
			key, ok := kt.(string)
			if !ok {
				return errors.New("malformed JSON: object key is not a string")
			}
			if seen[key] {
				return fmt.Errorf("duplicate key %q", key)
			}
			seen[key] = true
			if keyOK != nil && !keyOK(key) {
				return fmt.Errorf("key %q not allowed", key)
			}
			if err := value(dec, keyOK, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := value(dec, keyOK, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
