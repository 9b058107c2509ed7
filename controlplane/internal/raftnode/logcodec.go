package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/varint"
)

// The format of one entry in the log store, keyed by its index (8 bytes,
// big-endian, so that bbolt's byte order is the log's order):
//
//	version   1 byte, logFormat
//	term      uvarint
//	type      1 byte, raft.LogType
//	data      uvarint length, bytes
//	ext       uvarint length, bytes (raft.Log.Extensions)
//	appended  varint, Unix nanoseconds of AppendedAt; 0 when unset
//
// Every varint is in its shortest form and nothing follows, so that an
// entry has exactly one encoding.
const logFormat = 1

// ErrLogCorrupt is wrapped by every error of an entry the store cannot
// decode: a log store that answers with it has been written by something
// else, or damaged on disk.
var ErrLogCorrupt = errors.New("raftnode: log entry corrupt")

func logKey(i uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), i) }

// appendLog appends the encoding of l, without its index, to b.
func appendLog(b []byte, l *raft.Log) []byte {
	b = append(b, logFormat)
	b = binary.AppendUvarint(b, l.Term)
	b = append(b, byte(l.Type))
	b = varint.AppendBytes(b, l.Data)
	b = varint.AppendBytes(b, l.Extensions)
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	return binary.AppendVarint(b, at)
}

// decodeLog decodes the entry of index i from b into l. l's Data and
// Extensions are copies: b may be bbolt's memory, valid only in its
// transaction.
func decodeLog(i uint64, b []byte, l *raft.Log) error {
	bad := func(what string) error { return fmt.Errorf("%w: entry %d: %s", ErrLogCorrupt, i, what) }
	if len(b) == 0 || b[0] != logFormat {
		return bad("unknown format")
	}
	b = b[1:]
	term, n := varint.Uvarint(b)
	if n <= 0 {
		return bad("term")
	}
	b = b[n:]
	if len(b) == 0 {
		return bad("type")
	}
	typ := raft.LogType(b[0])
	b = b[1:]
	var data, ext []byte
	for _, f := range []*[]byte{&data, &ext} {
		size, n := varint.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return bad("length")
		}
		if size > 0 {
			*f = append([]byte(nil), b[n:n+int(size)]...)
		}
		b = b[n+int(size):]
	}
	at, n := varint.Varint(b)
	if n <= 0 || n != len(b) {
		return bad("time")
	}
	*l = raft.Log{Index: i, Term: term, Type: typ, Data: data, Extensions: ext}
	if at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	return nil
}
