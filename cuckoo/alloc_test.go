package cuckoo

import "testing"

// The hot paths allocate nothing (a growth allocates its sub-filter; the
// filter here never grows).
func TestHotPathsAllocateNothing(t *testing.T) {
	f := mustNew(t, 1<<16)
	items := benchKeys(100)
	dst, st := make([]bool, len(items)), make([]Status, len(items))
	for name, op := range map[string]func(){
		"Add":           func() { f.Add(items[0]); f.Delete(items[0]) },
		"AddUnique":     func() { f.AddUnique(items[1]) },
		"AddString":     func() { f.AddString("x"); f.DeleteString("x") },
		"Test":          func() { f.Test(items[2]) },
		"TestString":    func() { f.TestString("y") },
		"Count":         func() { f.Count(items[3]) },
		"Delete":        func() { f.Delete(items[4]) },
		"TestMany":      func() { f.TestMany(items, dst) },
		"AddMany":       func() { f.AddMany(items, st); f.Compact() },
		"AddUniqueMany": func() { f.AddUniqueMany(items, st) },
		"ScanDump":      func() { f.ScanDump(2) },
	} {
		if n := testing.AllocsPerRun(100, op); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}
