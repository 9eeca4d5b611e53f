package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bloomery/bloom/guard"
)

// newStore opens a fresh SQLite database with n users.
func newStore(t testing.TB, n int) *store {
	t.Helper()
	st, err := openStore(filepath.Join(t.TempDir(), "users.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.seed(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return st
}

// newGuard puts a guard with membership m (nil: in process) before st.
func newGuard(t testing.TB, st *store, m guard.Membership) *guard.Guard[User] {
	t.Helper()
	g, err := guard.New(context.Background(), &guard.Options[User]{
		Load: st.load, IDs: st.ids, Count: st.count, Membership: m,
		// Added's promise rests on the commit window: room for a busy
		// machine and SQLite's write lock.
		CommitWindow: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}
