package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no cgo
)

// User is a row of the users table.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// store is the source of truth: a SQLite database with a users table,
// and a count of the point queries the guard's loader made.
type store struct {
	db      *sql.DB
	queries atomic.Int64
}

// openStore opens (creating if need be) the SQLite database at path, in
// WAL mode so that readers do not wait for the writer.
func openStore(path string) (*store, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("create table: %w", err)
	}
	return &store{db: db}, nil
}

func (s *store) Close() error { return s.db.Close() }

// userID is the ID of the i-th seeded user.
func userID(i int) string { return fmt.Sprintf("u%07d", i) }

// seed inserts users u0000000 … up to n rows, in one transaction.
func (s *store) seed(ctx context.Context, n int) error {
	have, err := s.count(ctx)
	if err != nil || int(have) >= n {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO users (id, name) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	for i := range n {
		if _, err := ins.ExecContext(ctx, userID(i), fmt.Sprintf("user %d", i)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// load is the guard's loader: one point query.
func (s *store) load(ctx context.Context, id string) (User, bool, error) {
	s.queries.Add(1)
	u := User{ID: id}
	err := s.db.QueryRowContext(ctx, `SELECT name FROM users WHERE id = ?`, id).Scan(&u.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, false, nil
	}
	return u, err == nil, err
}

func (s *store) insert(ctx context.Context, u User) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO users (id, name) VALUES (?, ?)`, u.ID, u.Name)
	return err
}

func (s *store) delete(ctx context.Context, id string) (bool, error) {
	r, err := s.db.ExecContext(ctx, `DELETE FROM users WHERE id = ?`, id)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n == 1, err
}

func (s *store) count(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n)
	return n, err
}

// ids iterates over every user's ID; the query runs when the iteration
// starts, in one read transaction (a consistent snapshot).
func (s *store) ids(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		rows, err := s.db.QueryContext(ctx, `SELECT id FROM users`)
		if err != nil {
			yield("", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				yield("", err)
				return
			}
			if !yield(id, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield("", err)
		}
	}
}
