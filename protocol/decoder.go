package protocol

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

var (
	emptyReader = bytes.NewReader(nil)
	// decoderPool keeps token decoders between calls: a decoder owns buffers that
	// would otherwise be allocated again for every verification.
	decoderPool = sync.Pool{New: func() any { return jsontext.NewDecoder(emptyReader) }}
)
