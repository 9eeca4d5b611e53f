package server

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fuzzLog builds a log of records from lines of space-separated
// arguments, cut short by cut bytes.
func fuzzLog(data []byte, cut uint16) []byte {
	var b []byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if args := bytes.Fields(line); len(args) > 0 {
			b = appendRecord(b, args)
		}
	}
	return b[:len(b)-min(int(cut), len(b))]
}

// replayBytes replays data as the last log into a memstore with small
// limits; it returns the store, and the log as it is after (a torn end
// cut off).
func replayBytes(t *testing.T, data []byte) (*memstore, []byte, error) {
	name := filepath.Join(t.TempDir(), logName(1))
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m := newLoadingMemstore(64 << 10)
	p := &persistence{ks: m.ks, log: slog.New(slog.DiscardHandler)}
	_, err := p.replayLog(name, true, newReplayer(m, testCommands()))
	if err != nil && (!strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "offset")) {
		t.Fatalf("error without file or offset: %v", err)
	}
	after, rerr := os.ReadFile(name)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return m, after, err
}

func FuzzReplayLog(f *testing.F) {
	for _, s := range []string{
		"BF.RESERVE k 0.01 100 EXPANSION 2\nBF.INSERT k NOCREATE ITEMS a b\nDEL k",
		"BF.INSERT k CAPACITY 10 ERROR 0.1 NONSCALING ITEMS a\nRENAME k j\nPEXPIREAT j 99999999999999\nPERSIST j",
		"BF.RESERVE k 0.001 1073741824\nFLUSHALL",
		"BF.LOADCHUNK k 1 xxxx\nSET a b",
		"BF.INSERT k ITEMS a\nBF.ADD k b\nBF.ADD gone c\nCF.ADD k d",
		"CF.INSERT c CAPACITY 1024 ITEMS a\nCF.ADD c b\nCF.ADD c\nCF.ADD gone x",
	} {
		f.Add([]byte(s), true, uint16(0))
		f.Add([]byte(s), true, uint16(7))
		f.Add(fuzzLog([]byte(s), 0), false, uint16(0))
	}
	f.Add(append(fuzzLog([]byte("BF.ADD k a\nBF.ADD k b"), 0), make([]byte, 300)...), false, uint16(0)) // zeros after the records
	f.Add(append(fuzzLog([]byte("BF.ADD k a\nBF.ADD k b"), 9), make([]byte, 300)...), false, uint16(0)) // after a torn one
	f.Add([]byte("*1\r\n$999999999999\r\n"), false, uint16(0))
	f.Add([]byte("*999999999\r\n$1\r\n"), false, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, build bool, cut uint16) {
		if build {
			data = fuzzLog(data, cut)
		}
		// Memory: a record's buffers never outgrow the file.
		lr := newLogReader(bytes.NewReader(data), int64(len(data)))
		for {
			if _, err := lr.next(); err != nil {
				break
			}
		}
		if cap(lr.rec) > 2*len(data)+64 || len(lr.span) > len(data)/4 {
			t.Fatalf("a log of %d bytes took a record buffer of %d and %d spans", len(data), cap(lr.rec), len(lr.span))
		}
		m, after, err := replayBytes(t, data)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(data, after) {
			t.Fatalf("loading changed the log beyond cutting its end")
		}
		// What loaded loads again, the same, with nothing to cut.
		m2, again, err := replayBytes(t, after)
		if err != nil || !bytes.Equal(again, after) {
			t.Fatalf("reloading the loaded log: %v (%d bytes, was %d)", err, len(again), len(after))
		}
		if a, b := storeState(m), storeState(m2); a != b {
			t.Fatalf("reloaded state differs:\n%s\n%s", a, b)
		}
	})
}

// storeState describes a memstore's keys, expiries and filters.
func storeState(m *memstore) string {
	var b strings.Builder
	_, keys := m.ks.scan(0, 1<<30, func(string) bool { return true })
	for _, k := range slices.Sorted(slices.Values(keys)) {
		unlock := m.ks.lock(k)
		e := m.ks.peek(k)
		var enc []byte
		if f := e.cuckoo(); f != nil {
			enc, _ = f.MarshalBinary()
		} else {
			enc, _ = e.filter.MarshalBinary()
		}
		// Not a CRC-32C: an encoding ends with the CRC-32C of what
		// precedes it, and a CRC over a message and its own CRC is the
		// same for every message (the residue), so it told filters of
		// one size apart by nothing.
		sum := sha256.Sum256(enc)
		fmt.Fprintf(&b, "%s %d %x\n", k, e.expireAt, sum[:8])
		unlock()
	}
	return b.String()
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
