//go:build unix

// Sparse files and their allocated blocks (syscall.Stat_t) are Unix's.

package server

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bloomery/bloom/internal/encio"
)

// sparseWriter writes exactly the bytes it is given, whatever the
// pattern of zeros and the sizes of the writes, and leaves whole zero
// blocks unallocated.
func TestSparseWriter(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	block := func(zero bool, n int) []byte {
		b := make([]byte, n)
		if !zero {
			for i := range b {
				b[i] = byte(rnd.IntN(255) + 1)
			}
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		parts [][]byte
	}{
		{"empty", nil},
		{"small data", [][]byte{block(false, 100)}},
		{"all zeros, unaligned end", [][]byte{block(true, 5*holeBlock+17)}},
		{"zeros then data", [][]byte{block(true, 8*holeBlock), block(false, 10)}},
		{"data, zeros, data", [][]byte{block(false, 3), block(true, 20*holeBlock), block(false, holeBlock+1)}},
		{"trailing hole", [][]byte{block(false, holeBlock), block(true, 40*holeBlock)}},
		{"tiny writes", func() [][]byte {
			var ps [][]byte
			for i := range 3000 {
				ps = append(ps, block(i%700 != 0, rnd.IntN(3000)))
			}
			return ps
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			w := newSparseWriter(f)
			var want bytes.Buffer
			for _, p := range tc.parts {
				if n, err := w.Write(p); err != nil || n != len(p) {
					t.Fatalf("Write: %d, %v", n, err)
				}
				want.Write(p)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, err := os.ReadFile(name)
			if err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("file differs: %d bytes, want %d (%v)", len(got), want.Len(), err)
			}
			var st syscall.Stat_t
			syscall.Stat(name, &st)
			zeros := 0
			for i := 0; i+holeBlock <= want.Len(); i += holeBlock {
				if encio.AllZero(want.Bytes()[i : i+holeBlock]) {
					zeros++
				}
			}
			if alloc := st.Blocks * 512; zeros > 4 && alloc > int64(want.Len())-int64(zeros-2)*holeBlock {
				t.Errorf("%d bytes allocated for %d bytes of which %d zero blocks", alloc, want.Len(), zeros)
			}
		})
	}
}

// countSyncs is a file that counts its fsyncs.
type countSyncs struct {
	*os.File
	syncs int
}

func (c *countSyncs) Sync() error { c.syncs++; return c.File.Sync() }

// A file that can be fsynced is fsynced every syncEvery bytes of data
// written, and holes count for nothing.
func TestSparseWriterSyncsAsItGoes(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &countSyncs{File: f}
	w := newSparseWriter(c)
	data := bytes.Repeat([]byte{1}, holeBlock)
	for range 2*syncEvery/holeBlock + 1 {
		w.Write(data)
		w.Write(make([]byte, holeBlock)) // a hole
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if c.syncs != 2 {
		t.Fatalf("%d fsyncs for %d bytes of data", c.syncs, (2*syncEvery/holeBlock+1)*holeBlock)
	}
}
