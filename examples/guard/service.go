package main

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"

	"github.com/bloomery/bloom/guard"
)

// service is the example's HTTP API over the guard and the store.
type service struct {
	store *store
	g     *guard.Guard[User]
}

func (s *service) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", s.get)
	mux.HandleFunc("POST /users", s.create)
	mux.HandleFunc("DELETE /users/{id}", s.remove)
	mux.HandleFunc("POST /rebuild", s.rebuild)
	mux.HandleFunc("GET /stats", s.stats)
	return mux
}

func (s *service) get(w http.ResponseWriter, r *http.Request) {
	u, err := s.g.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, guard.ErrNotFound) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

// create inserts a user; the guard's filter learns the ID before the
// INSERT commits.
func (s *service) create(w http.ResponseWriter, r *http.Request) {
	var u User
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&u); err != nil || u.ID == "" {
		http.Error(w, "want a JSON body {\"id\": …, \"name\": …}", http.StatusBadRequest)
		return
	}
	err := s.g.Write(r.Context(), u.ID, func(ctx context.Context) error { return s.store.insert(ctx, u) })
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}

func (s *service) remove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	deleted, err := s.store.delete(r.Context(), id)
	if err == nil && deleted {
		err = s.g.Removed(r.Context(), id)
	}
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	case !deleted:
		http.Error(w, "not found", http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *service) rebuild(w http.ResponseWriter, r *http.Request) {
	if err := s.g.Rebuild(r.Context()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// statsReply is GET /stats: the guard's counters and the database's.
type statsReply struct {
	Guard     guard.Stats `json:"guard"`
	DBQueries int64       `json:"db_queries"`
}

func (s *service) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, statsReply{Guard: s.g.Stats(), DBQueries: s.store.queries.Load()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// noFilter is a membership that lets every ID through: with it a Guard
// is a cache, a negative cache and singleflight, and nothing more
// (go-zero's placeholder approach), the baseline the filter is measured
// against.
type noFilter struct{}

func (noFilter) Test(context.Context, string) (bool, error) { return true, nil }
func (noFilter) Ready(context.Context) (bool, error)        { return true, nil }
func (noFilter) Rebuild(context.Context, guard.Plan, iter.Seq2[string, error]) error {
	return nil
}
func (noFilter) Add(ctx context.Context, _ string, commit func(context.Context) error) error {
	if commit == nil {
		return nil
	}
	return commit(ctx)
}
