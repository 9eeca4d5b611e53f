package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// record replaces the file operations with ones that log what they do to
// ops (fsync of a file or directory, rename) and fail with fail[op].
func record(t *testing.T, fail map[string]error) *[]string {
	t.Helper()
	var ops []string
	oldFsync, oldRename := fsync, rename
	t.Cleanup(func() { fsync, rename = oldFsync, oldRename })
	fsync = func(f *os.File) error {
		ops = append(ops, "fsync "+f.Name())
		if err := fail["fsync"]; err != nil {
			return err
		}
		return f.Sync()
	}
	rename = func(from, to string) error {
		ops = append(ops, "rename "+from+" "+to)
		if err := fail["rename"]; err != nil {
			return err
		}
		return os.Rename(from, to)
	}
	return &ops
}

// leftovers lists the files in dir other than keep.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !slices.Contains(keep, e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestCommitIsDurable: the content is fsynced before the rename makes it
// the target, and the directory after, so that a crash at any moment
// leaves the old or the whole new file.
func TestCommitIsDurable(t *testing.T) {
	ops := record(t, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bloom")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, 0o644, strings.NewReader("new content")); err != nil {
		t.Fatal(err)
	}
	if len(*ops) != 3 {
		t.Fatalf("operations %q, want fsync, rename, fsync of the directory", *ops)
	}
	tmp := strings.TrimPrefix((*ops)[0], "fsync ")
	want := []string{"fsync " + tmp, "rename " + tmp + " " + path, "fsync " + dir}
	if !slices.Equal(*ops, want) || filepath.Dir(tmp) != dir || !strings.HasPrefix(filepath.Base(tmp), ".out.bloom.tmp-") {
		t.Errorf("operations\n%q\nwant\n%q", *ops, want)
	}
	if got, err := os.ReadFile(path); string(got) != "new content" || err != nil {
		t.Errorf("target holds %q, %v", got, err)
	}
	if left := leftovers(t, dir, "out.bloom"); left != nil {
		t.Errorf("left behind: %q", left)
	}
}

// TestPermissions: a new file gets perm less the umask, as os.Create's.
func TestPermissions(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	f, err := os.OpenFile(ref, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	path := filepath.Join(dir, "out")
	if err := WriteFile(path, 0o666, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(ref)
	got, err := os.Stat(path)
	if err != nil || got.Mode() != want.Mode() {
		t.Errorf("mode %v (%v), want %v", got.Mode(), err, want.Mode())
	}
}

// failingWriter writes a little, then fails with boom.
type failingWriter struct{ err error }

func (f failingWriter) WriteTo(w io.Writer) (int64, error) {
	n, _ := w.Write([]byte("partial"))
	return int64(n), f.err
}

// TestFailuresKeepTheTarget: whatever fails before the rename, the target
// keeps its old content and no temporary file is left.
func TestFailuresKeepTheTarget(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		fail map[string]error
		w    io.WriterTo
	}{
		{"fsync fails", map[string]error{"fsync": boom}, strings.NewReader("new")},
		{"rename fails", map[string]error{"rename": boom}, strings.NewReader("new")},
		{"writer fails", nil, failingWriter{boom}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			record(t, tt.fail)
			dir := t.TempDir()
			path := filepath.Join(dir, "out")
			if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(path, 0o666, tt.w); !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
				t.Errorf("WriteFile: %v, want boom naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != "old" {
				t.Errorf("target holds %q, want the old content", got)
			}
			if left := leftovers(t, dir, "out"); left != nil {
				t.Errorf("left behind: %q", left)
			}
		})
	}

	// Commit and Abort once only: Abort after either does nothing.
	path := filepath.Join(t.TempDir(), "once")
	a, err := Create(path, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	a.Abort()
	a.Abort()
	if err := a.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("Commit after Abort made the target")
	}
}

// TestSyncDirMissing: a directory that cannot be opened is an error
// naming it.
func TestSyncDirMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if err := SyncDir(missing); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("SyncDir of a missing directory: %v", err)
	}
}

// A sparse writer seeks over holes and extends the file: Seek and
// Truncate reach the temporary file, and Commit keeps the result; the
// temporary file's name is one IsTemp recognises until then.
func TestSeekTruncateIsTemp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	a, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !IsTemp(filepath.Base(a.Name())) || IsTemp("snap") || IsTemp("snapshot.1.bdb") {
		t.Fatalf("IsTemp: %s not recognised, or a plain name taken for one", a.Name())
	}
	a.Write([]byte("ab"))
	if _, err := a.Seek(10, io.SeekCurrent); err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("c"))
	if err := a.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	want := append(append([]byte("ab"), make([]byte, 10)...), 'c')
	want = append(want, make([]byte, 7)...)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file %q (%v), want %q", got, err, want)
	}
}

// TestSyncAsItGoes: Sync fsyncs the temporary file, not the target, and
// its failure is returned.
func TestSyncAsItGoes(t *testing.T) {
	boom := errors.New("boom")
	fail := map[string]error{}
	ops := record(t, fail)
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fsync " + f.Name()}; !slices.Equal(*ops, want) {
		t.Fatalf("operations %q, want %q", *ops, want)
	}
	fail["fsync"] = boom
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("a failed fsync: %v", err)
	}
}
