package controlplane

import "github.com/go-json-experiment/json"

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own well-formed structs are marshaled
	}
	return b
}
