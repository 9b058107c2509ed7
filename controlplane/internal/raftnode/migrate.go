package raftnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	bolt "go.etcd.io/bbolt"

	"github.com/writhq/writ/internal/jsonx"
)

// ErrMigrate is wrapped by every error of a raft-wal directory that cannot
// be migrated. The directory is left as it was.
var ErrMigrate = errors.New("raftnode: the raft-wal log cannot be migrated")

// Migration says what MigrateWAL copied.
type Migration struct {
	First, Last uint64   // the entries copied, 0 and 0 for an empty log
	Entries     uint64   // Last-First+1, or 0
	Stable      []string // the stable store keys copied (CurrentTerm, LastVoteTerm, LastVoteCand, ...)
	MovedTo     string   // where the raft-wal directory now is
}

// MigrateWAL copies the log and the stable store of the raft-wal directory
// walDir into a new LogStore at dst, atomically: it writes dst+".migrating"
// (each transaction fsynced), renames it to dst and fsyncs the directory,
// then renames walDir to walDir+".migrated" (or, if that exists, a name with
// the time). A crash at any point leaves either the raft-wal directory
// whole and no dst (the next start migrates again), or dst complete (the
// next start only moves walDir aside).
//
// It reads raft-wal's files itself, with raft-wal's own segment reader and
// codec, without opening the WAL: the entries of a sealed segment whose
// index block raft-wal never wrote (hashicorp/raft-wal#31, which makes
// raft-wal's GetLog fail and Raft panic at start) are read frame by frame
// like those of the tail. The copy must be one run of consecutive entries
// matching raft-wal's metadata; anything else is refused with ErrMigrate and
// changes nothing. A panic in raft-wal's code is refused the same way.
func MigrateWAL(walDir, dst string) (m Migration, err error) {
	if _, err := os.Stat(dst); err == nil {
		return m, fmt.Errorf("%w: %s exists already", ErrMigrate, dst)
	}
	tmp := dst + ".migrating"
	for _, p := range []string{tmp, journalPath(tmp)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return m, err
		}
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
		// Close copied the journal's entries into tmp: an empty journal
		// beside the temporary name is left over.
		os.Remove(journalPath(tmp))
	}()
	var state types.PersistentState
	var stable map[string][]byte
	if err := recovering(walDir, func() (err error) {
		state, stable, err = readWALMeta(walDir)
		return err
	}); err != nil {
		return m, err
	}
	s, err := OpenLogStore(tmp)
	if err != nil {
		return m, err
	}
	copyErr := recovering(walDir, func() error { return copyWAL(walDir, state, stable, s, &m) })
	if err := s.Close(); copyErr == nil {
		copyErr = err
	}
	if copyErr != nil {
		return m, copyErr
	}
	if err := os.Remove(journalPath(dst)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return m, err
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return m, err
	}
	m.MovedTo, err = moveWALAside(walDir)
	return m, err
}

// moveWALAside renames a migrated raft-wal directory to walDir+".migrated",
// or, if that exists, to a name with the time, and returns the new name.
func moveWALAside(walDir string) (string, error) {
	to := walDir + ".migrated"
	if _, err := os.Stat(to); err == nil {
		to = walDir + ".migrated-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	}
	if err := os.Rename(walDir, to); err != nil {
		return "", fmt.Errorf("raftnode: moving the migrated raft-wal directory aside: %w", err)
	}
	return to, syncDir(filepath.Dir(walDir))
}

// recovering runs f, turning a panic in raft-wal's code into ErrMigrate.
func recovering(walDir string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: raft-wal failed reading %s: %v", ErrMigrate, walDir, r)
		}
	}()
	return f()
}

// readWALMeta reads raft-wal's segment list and stable store from its meta
// file, opened read-only.
func readWALMeta(walDir string) (types.PersistentState, map[string][]byte, error) {
	var state types.PersistentState
	stable := map[string][]byte{}
	path := filepath.Join(walDir, metadb.FileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// raft-wal writes its meta file before any segment: without it,
		// the directory holds nothing (or nothing raft-wal would read).
		if segs, _ := filepath.Glob(filepath.Join(walDir, "*.wal")); len(segs) > 0 {
			return state, nil, fmt.Errorf("%w: %s has segments but no %s", ErrMigrate, walDir, metadb.FileName)
		}
		return state, stable, nil
	} else if err != nil {
		return state, nil, fmt.Errorf("%w: %v", ErrMigrate, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return state, nil, fmt.Errorf("%w: opening %s: %v", ErrMigrate, path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(metadb.MetaBucket)); b != nil {
			if raw := b.Get([]byte(metadb.MetaKey)); raw != nil {
				if err := jsonx.UnmarshalLenient(raw, &state); err != nil {
					return fmt.Errorf("%w: the segment list in %s: %v", ErrMigrate, path, err)
				}
			}
		}
		if b := tx.Bucket([]byte(metadb.StableBucket)); b != nil {
			return b.ForEach(func(k, v []byte) error {
				stable[string(k)] = append([]byte{}, v...)
				return nil
			})
		}
		return nil
	})
	return state, stable, err
}

// copyWAL copies the stable values, then every segment's entries in order,
// in transactions of up to 512 entries.
func copyWAL(walDir string, state types.PersistentState, stable map[string][]byte, s *LogStore, m *Migration) error {
	for k, v := range stable {
		if err := s.Set([]byte(k), v); err != nil {
			return err
		}
		m.Stable = append(m.Stable, k)
	}
	filer := segment.NewFiler(walDir, walfs.New())
	codec := &wal.BinaryCodec{}
	var batch []*raft.Log
	flush := func() error {
		err := s.StoreLogs(batch)
		batch = batch[:0]
		return err
	}
	next := uint64(0) // the index the next entry must have; 0 before the first
	for i, si := range state.Segments {
		if si.Codec != codec.ID() {
			return fmt.Errorf("%w: segment %d uses codec %d, not raft-wal's binary codec", ErrMigrate, si.ID, si.Codec)
		}
		lo := max(si.MinIndex, si.BaseIndex)
		sealed := !si.SealTime.IsZero()
		if !sealed && i < len(state.Segments)-1 {
			return fmt.Errorf("%w: unsealed segment %d is not the last", ErrMigrate, si.ID)
		}
		var end uint64 // the last entry to copy, 0 for all
		if sealed && si.MaxIndex > 0 {
			end = si.MaxIndex
		}
		if next != 0 && lo != next {
			return fmt.Errorf("%w: segment %d starts at entry %d, after entry %d", ErrMigrate, si.ID, lo, next-1)
		}
		// No upper bound for DumpSegment: it passes on entries only when it
		// reads their batch's commit frame, which follows the last of them.
		err := filer.DumpSegment(si.BaseIndex, si.ID, lo-1, 0, func(_ types.SegmentInfo, e types.LogEntry) (bool, error) {
			if end != 0 && e.Index > end {
				return true, nil // truncated from the tail
			}
			l := new(raft.Log)
			if err := codec.Decode(e.Data, l); err != nil {
				return false, fmt.Errorf("%w: entry %d of segment %d: %v", ErrMigrate, e.Index, si.ID, err)
			}
			if l.Index != e.Index || (next != 0 && l.Index != next) {
				return false, fmt.Errorf("%w: segment %d holds entry %d where entry %d belongs", ErrMigrate, si.ID, l.Index, max(next, e.Index))
			}
			// The codec's slices are views of a buffer reused for the next entry.
			l.Data = append([]byte(nil), l.Data...)
			l.Extensions = append([]byte(nil), l.Extensions...)
			if len(l.Extensions) == 0 {
				l.Extensions = nil
			}
			if len(l.Data) == 0 {
				l.Data = nil
			}
			if m.First == 0 {
				m.First = l.Index
			}
			m.Last, next = l.Index, l.Index+1
			batch = append(batch, l)
			if len(batch) == 512 {
				return true, flush()
			}
			return true, nil
		})
		switch {
		case errors.Is(err, ErrMigrate):
			return err
		case err != nil:
			return fmt.Errorf("%w: reading segment %d: %v", ErrMigrate, si.ID, err)
		case end != 0 && m.Last != end:
			return fmt.Errorf("%w: segment %d should hold entries %d to %d, and the last that could be read is entry %d",
				ErrMigrate, si.ID, lo, end, m.Last)
		}
	}
	if m.First != 0 {
		m.Entries = m.Last - m.First + 1
	}
	return flush()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
