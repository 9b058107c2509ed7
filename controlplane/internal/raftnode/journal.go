package raftnode

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/varint"
)

// The append journal: a file of fixed size beside the log store's bbolt
// file (raft.db.journal), into which LogStore.StoreLogs writes each batch
// of entries as one record and fdatasyncs once, where a bbolt commit
// fdatasyncs twice (its pages, then its meta page). The file is written
// whole with zeros when it is made, so that an append overwrites blocks the
// file already has: fdatasync then flushes the record and no metadata (no
// size, no block allocation). From time to time (the journal full, a
// deletion, a Set, Close, Open) the entries it holds are copied into bbolt
// in one transaction and the journal starts again, under a new generation.
//
// Layout: a header block, then records from journalHeaderSize on.
//
//	header block  two header slots, at offsets 0 and journalSlotB (2048)
//	header  "WRITJNL1", generation (8 bytes, big-endian), salt (8 random bytes), CRC-32C of the 24 bytes before it
//	record  payload length (4 bytes), CRC-32C of salt‖generation‖length‖payload (4 bytes), payload
//	payload uvarint count, then per entry: index (8 bytes, big-endian), uvarint length, the entry as logcodec encodes it
//
// Reading stops at the first record whose length is 0, runs past the end,
// or whose checksum fails: a record torn by a crash (never acknowledged:
// its fdatasync had not returned) and records of an earlier generation
// (whose checksum includes the generation they were written under) are
// never taken.
//
// A new generation's header goes into the slot that does not hold the
// current one, and the slot whose header checks and names the higher
// generation is the journal's: a header torn by a crash while it was
// written fails its checksum, and the previous one, still whole in the
// other slot, is read instead. Nothing acknowledged is lost by that: a
// header is written only after the records of its predecessor are durable
// in bbolt, and no record of the new generation is written before its
// header's fdatasync returns. The salt, new with each generation and never shown, keeps
// entry data from passing for a record: bytes a client chose, inside an
// entry of an earlier generation, cannot carry a checksum of this one.
//
// Headers are written with journalMagic; a build that read only the first
// slot wrote journalMagicV1 there, which is still read. Such a build must not
// open a journal whose current header is in the second slot (it would
// replay a generation already copied, and maybe since deleted, and miss the
// current one): it refuses a header whose magic is not its own, so the first
// new generation written over a journal of that build is written into both
// slots (reset), and from then on the first slot never holds its magic.
const (
	journalMagic      = "WRITJNL2"
	journalMagicV1    = "WRITJNL1"
	journalHeaderSize = 4096
	// journalSlotB is the offset of the second header slot, in another
	// 512-byte sector than the first (at 0).
	journalSlotB = 2048
	// journalSize is the journal's file size. Copying a full journal into
	// bbolt holds up the append that found it full (2 MiB of small entries:
	// 40-70 ms on the development machine), so it is kept small.
	journalSize = 2 << 20
	// journalDirect is the largest record the journal takes: a larger batch
	// goes straight to bbolt.
	journalDirect = journalSize / 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// journalPath is the journal of the log store at path.
func journalPath(path string) string { return path + ".journal" }

// journal is the open append journal. Its methods are called with the
// store's write lock held.
type journal struct {
	f    *os.File
	gen  uint64
	salt [8]byte
	off  int64 // where the next record goes
	slot int64 // the offset of the slot holding the current header
	v1   bool  // the first slot holds a header of the first format (journalMagicV1)
	// broken: a write or fdatasync failed; what the file holds past off, or
	// its header, is unknown until a reset succeeds.
	broken bool
}

// openJournal opens the journal of the store at path, making it first when
// there is none, and returns the entries its records hold, in order.
func openJournal(path string) (*journal, []*raft.Log, error) {
	jp := journalPath(path)
	f, err := os.OpenFile(jp, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := makeJournal(jp); err != nil {
			return nil, nil, err
		}
		f, err = os.OpenFile(jp, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("raftnode: opening the log journal: %w", err)
	}
	j, logs, err := readJournal(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("raftnode: reading the log journal %s: %w", jp, err)
	}
	return j, logs, nil
}

// makeJournal writes an empty journal of generation 1 (in the first slot,
// the second zeros) under a temporary
// name, syncs it and renames it into place, so that a journal that exists
// is complete.
func makeJournal(jp string) error {
	tmp := jp + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("raftnode: making the log journal: %w", err)
	}
	err = func() error {
		zeros := make([]byte, 1<<20)
		h, err := journalHeader(1)
		if err != nil {
			return err
		}
		copy(zeros, h)
		for off := 0; off < journalSize; off += len(zeros) {
			if _, err := f.WriteAt(zeros, int64(off)); err != nil {
				return err
			}
			clear(zeros[:journalHeaderSize])
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, jp)
	}
	if err == nil {
		err = syncDir(filepath.Dir(jp))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("raftnode: making the log journal: %w", err)
	}
	return nil
}

// journalHeaderLen is the header's length: magic, generation, salt, CRC.
const journalHeaderLen = len(journalMagic) + 8 + 8 + 4

// journalHeader returns a header of generation gen with a new salt.
func journalHeader(gen uint64) ([]byte, error) {
	h := binary.BigEndian.AppendUint64([]byte(journalMagic), gen)
	h = append(h, make([]byte, 8)...)
	if _, err := rand.Read(h[len(h)-8:]); err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli)), nil
}

// readJournal reads the header and every record of the current generation.
func readJournal(f *os.File) (*journal, []*raft.Log, error) {
	b := make([]byte, journalSize)
	if n, err := f.ReadAt(b, 0); n != journalSize {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: the journal is %d bytes, not %d", ErrLogCorrupt, n, journalSize)
		}
		return nil, nil, err
	}
	var j *journal
	damaged := false
	for _, slot := range []int64{0, journalSlotB} {
		h := b[slot : slot+int64(journalHeaderLen)]
		gen, salt, ok := parseJournalHeader(h, slot == 0)
		if ok && (j == nil || gen > j.gen) {
			j = &journal{f: f, gen: gen, salt: salt, off: journalHeaderSize, slot: slot}
		}
		damaged = damaged || !ok && !allZero(h)
	}
	if j == nil {
		return nil, nil, fmt.Errorf("%w: neither of the journal's header slots holds a header", ErrLogCorrupt)
	}
	// A reset zeroes the first record's word before it writes a header, so
	// a slot torn by one has no record after it; a slot that does not
	// parse with records after it was damaged otherwise, maybe the current
	// one, and the other's older generation would drop its records.
	if damaged && !allZero(b[journalHeaderSize:journalHeaderSize+8]) {
		return nil, nil, fmt.Errorf("%w: a header slot of the journal is damaged and records follow", ErrLogCorrupt)
	}
	j.v1 = string(b[:len(journalMagicV1)]) == journalMagicV1
	var logs []*raft.Log
	for {
		payload, ok := j.record(b[j.off:])
		if !ok {
			return j, logs, nil
		}
		got, err := decodeJournalPayload(payload)
		if err != nil {
			// The checksum held: this journal's writer wrote it so.
			return nil, nil, err
		}
		logs = append(logs, got...)
		j.off += int64(8 + len(payload))
	}
}

// parseJournalHeader returns the generation and salt of the header h when it
// is one and its checksum holds; v1 accepts the first format's magic too.
func parseJournalHeader(h []byte, v1 bool) (gen uint64, salt [8]byte, ok bool) {
	magic := string(h[:len(journalMagic)])
	if magic != journalMagic && (!v1 || magic != journalMagicV1) ||
		binary.BigEndian.Uint32(h[len(h)-4:]) != crc32.Checksum(h[:len(h)-4], castagnoli) {
		return 0, salt, false
	}
	copy(salt[:], h[len(journalMagic)+8:])
	return binary.BigEndian.Uint64(h[len(journalMagic):]), salt, true
}

// record returns the payload of the record at the start of b when it is
// whole and of this generation.
func (j *journal) record(b []byte) ([]byte, bool) {
	if len(b) < 8 {
		return nil, false
	}
	size := binary.BigEndian.Uint32(b)
	if size == 0 || uint64(size) > uint64(len(b)-8) {
		return nil, false
	}
	payload := b[8 : 8+size]
	return payload, binary.BigEndian.Uint32(b[4:]) == j.sum(b[:4], payload)
}

func (j *journal) sum(size, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, binary.BigEndian.AppendUint64(j.salt[:], j.gen))
	c = crc32.Update(c, castagnoli, size)
	return crc32.Update(c, castagnoli, payload)
}

// encodeJournalRecord returns the record of logs, without its checksum
// (filled by append, which knows the generation).
func encodeJournalRecord(logs []*raft.Log) []byte {
	b := make([]byte, 8, 64+len(logs)*64)
	b = binary.AppendUvarint(b, uint64(len(logs)))
	var entry []byte
	for _, l := range logs {
		b = binary.BigEndian.AppendUint64(b, l.Index)
		entry = appendLog(entry[:0], l)
		b = varint.AppendBytes(b, entry)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-8))
	return b
}

func decodeJournalPayload(p []byte) ([]*raft.Log, error) {
	bad := fmt.Errorf("%w: a journal record does not decode", ErrLogCorrupt)
	count, n := varint.Uvarint(p)
	if n <= 0 || count == 0 || count > uint64(len(p)) {
		return nil, bad
	}
	p = p[n:]
	logs := make([]*raft.Log, 0, count)
	for range count {
		if len(p) < 8 {
			return nil, bad
		}
		index := binary.BigEndian.Uint64(p)
		p = p[8:]
		size, n := varint.Uvarint(p)
		if n <= 0 || size > uint64(len(p)-n) {
			return nil, bad
		}
		l := &raft.Log{Index: index}
		if err := decodeLog(index, p[n:n+int(size)], l); err != nil {
			return nil, err
		}
		logs = append(logs, l)
		p = p[n+int(size):]
	}
	if len(p) != 0 {
		return nil, bad
	}
	return logs, nil
}

// fits reports whether a record of n bytes fits in the room left.
func (j *journal) fits(n int) bool { return j.off+int64(n) <= journalSize }

// append writes rec (from encodeJournalRecord) at the end and fdatasyncs.
// On an error the journal may hold part of the record; the caller empties
// it (reset) before writing again.
func (j *journal) append(rec []byte) error {
	binary.BigEndian.PutUint32(rec[4:], j.sum(rec[:4], rec[8:]))
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		j.broken = true
		return err
	}
	if err := fdatasync(j.f); err != nil {
		j.broken = true
		return err
	}
	j.off += int64(len(rec))
	return nil
}

// empty reports whether the journal holds no record.
func (j *journal) empty() bool { return j.off == journalHeaderSize && !j.broken }

// reset starts a new generation: the records written so far are no longer
// read. The caller has made what they hold durable elsewhere first. The new
// header goes into the other slot, so that a crash while it is written
// leaves the current one whole; until the write and its fdatasync return,
// the journal is broken (no record is written under a header that may not
// be on disk).
func (j *journal) reset() error {
	if j.gen == math.MaxUint64 {
		return fmt.Errorf("%w: the journal's generations are spent", ErrLogCorrupt)
	}
	h, err := journalHeader(j.gen + 1)
	if err != nil {
		return err
	}
	next := journalSlotB - j.slot
	j.broken = true
	// The first record's word (length and checksum) is zeroed first: a slot
	// that does not parse then means a header torn by a reset only where
	// no record follows (readJournal), and anything else is damage.
	if _, err := j.f.WriteAt(make([]byte, 8), journalHeaderSize); err != nil {
		return err
	}
	if err := fdatasync(j.f); err != nil {
		return err
	}
	if _, err := j.f.WriteAt(h, next); err != nil {
		return err
	}
	if err := fdatasync(j.f); err != nil {
		return err
	}
	if j.v1 && next != 0 {
		// The first slot still holds the first format's magic: the new
		// header goes there too (the one just written stands if this
		// write tears), so that a build of that format refuses the file.
		if _, err := j.f.WriteAt(h, 0); err != nil {
			return err
		}
		if err := fdatasync(j.f); err != nil {
			return err
		}
	}
	j.v1 = false
	j.broken = false
	j.gen++
	j.slot = next
	copy(j.salt[:], h[len(journalMagic)+8:])
	j.off = journalHeaderSize
	return nil
}

func (j *journal) close() error { return j.f.Close() }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
