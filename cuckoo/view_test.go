package cuckoo

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// encode is f's encoding (MarshalBinary cannot fail on a valid filter).
func encode(t testing.TB, f *Filter) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// viewBytes is what v.WriteTo writes.
func viewBytes(t testing.TB, v *View) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := v.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) || n != v.EncodedSize() {
		t.Fatalf("WriteTo: %d bytes (buffer %d, EncodedSize %d), %v", n, buf.Len(), v.EncodedSize(), err)
	}
	return buf.Bytes()
}

// A view writes the filter as it was when taken, whatever changed since:
// adds that kick and grow, deletes that compact, CF.COMPACT and a loaded
// chunk; then, closed, it costs the filter nothing and another can open.
func TestViewIsTheInstant(t *testing.T) {
	f, items := grown(t, 300)
	want := encode(t, f)
	v, err := f.View()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.View(); !errors.Is(err, ErrViewOpen) {
		t.Fatalf("a second View while one is open: %v, want ErrViewOpen", err)
	}
	for i := range 400 { // kicks, and a growth or more
		if err := f.AddString(fmt.Sprint("after", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range items[:200] { // past 10% of the items: compactions
		if !f.DeleteString(it) {
			t.Fatalf("Delete %s found nothing", it)
		}
	}
	f.Compact()
	g := mustNew(t, 64)
	for i := range 50 {
		g.AddString(fmt.Sprint("other", i))
	}
	next, chunk := g.DumpChunk(1)
	if err := f.LoadChunk(next, chunk); err != nil { // sub-filter 0's bytes
		t.Fatal(err)
	}
	if bytes.Equal(encode(t, f), want) {
		t.Fatal("the changes changed nothing: the test proves nothing")
	}
	got := viewBytes(t, v)
	if !bytes.Equal(got, want) {
		t.Fatalf("the view's %d bytes differ from the %d bytes at the instant", len(got), len(want))
	}
	if _, err := v.WriteTo(new(bytes.Buffer)); !errors.Is(err, ErrViewWritten) {
		t.Fatalf("a second WriteTo: %v, want ErrViewWritten", err)
	}
	back, err := Load(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("the view's encoding does not load: %v", err)
	}
	for _, it := range items {
		if !back.TestString(it) {
			t.Fatalf("%s, added before the view, is missing from it", it)
		}
	}

	v.Close()
	f.AddString("after close")
	if f.view != nil {
		t.Fatal("the filter still holds its closed view after a change")
	}
	if _, err := f.View(); err != nil {
		t.Fatalf("View after Close: %v", err)
	}
}

// A view copies only the pages changed before it writes them out: a few
// adds to a large filter keep a few pages, and pages already written are
// not kept at all.
func TestViewCopiesOnlyChangedPages(t *testing.T) {
	f := mustNew(t, 1<<22, WithBucketSize(4)) // 4 MiB: 1,024 pages
	for i := range 100_000 {
		f.AddString(fmt.Sprint("x", i))
	}
	want := encode(t, f)
	v, err := f.View()
	if err != nil {
		t.Fatal(err)
	}
	const adds = 20
	for i := range adds {
		f.AddString(fmt.Sprint("during", i))
	}
	if n := v.pages.Kept(); n == 0 || n > 2*adds {
		t.Fatalf("%d pages kept for %d adds (want 1..%d)", n, adds, 2*adds)
	}
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if v.pages.Kept() != 0 {
		t.Fatalf("%d pages still kept after WriteTo", v.pages.Kept())
	}
	for i := range 1000 { // every page is written out: nothing to keep
		f.AddString(fmt.Sprint("later", i))
	}
	if v.pages.Kept() != 0 {
		t.Fatalf("%d pages kept for changes after they were written out", v.pages.Kept())
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("the view's encoding is not the filter at the instant")
	}
	v.Close()
}

// One goroutine writes the view out while another adds and deletes (the
// filter's owner): with -race they do not race, and the view is the
// instant.
func TestViewConcurrentChanges(t *testing.T) {
	f := mustNew(t, 1<<18) // 256 KiB, several chunks
	for i := range 50_000 {
		f.AddString(fmt.Sprint("x", i))
	}
	want := encode(t, f)
	v, err := f.View()
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var buf bytes.Buffer
		if _, err := v.WriteTo(&buf); err != nil {
			t.Error(err)
		}
		got = buf.Bytes()
		v.Close()
	}()
	for i := range 20_000 {
		f.AddString(fmt.Sprint("y", i))
		if i%3 == 0 {
			f.DeleteString(fmt.Sprint("x", i))
		}
	}
	wg.Wait()
	if !bytes.Equal(got, want) {
		t.Fatal("the view written during changes is not the filter at the instant")
	}
}
