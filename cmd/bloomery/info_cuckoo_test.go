package main

import (
	"strings"
	"testing"

	"github.com/bloomery/bloom/cuckoo"
)

// info describes a cuckoo filter file, and check tests items in it.
func TestInfoAndCheckCuckoo(t *testing.T) {
	f, err := cuckoo.New(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"apple", "banana", "cherry"} {
		if err := f.AddString(s); err != nil {
			t.Fatal(err)
		}
	}
	f.DeleteString("cherry")
	path := writeFilterFile(t, "c.cuckoo", f)
	code, out, stderr := runCLI(t, "info", path)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, rest := infoRows(t, out)
	checkRows(t, out, rows, map[string]string{
		"kind":        "cuckoo filter (kind 4",
		"bucket size": "2 slots",
		"buckets":     "64 (sub-filter 0)",
		"sub-filters": "1",
		"items":       "2 (adds less deletes)",
		"deletes":     "1 (since the last compaction)",
	})
	if !strings.Contains(rest, "2 of 128") {
		t.Errorf("no sub-filter table with 2 of 128 slots used:\n%s", out)
	}
	code, out, stderr = runCLI(t, "check", "-c", path, "apple", "banana", "cherry", "durian")
	if code != exitOK || out != "2\n" {
		t.Errorf("check -c: exit %d, %q, %s; want 2 found", code, out, stderr)
	}
}
