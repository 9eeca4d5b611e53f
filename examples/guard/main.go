// Command guard is a small HTTP service over a SQLite table of users,
// with a cache-penetration guard (package guard) in front of it:
//
//	GET    /users/{id}   a user, or 404
//	POST   /users        {"id": …, "name": …}: create a user
//	DELETE /users/{id}   delete a user
//	POST   /rebuild      rebuild the filter from the table
//	GET    /stats        the guard's counters and the database queries
//	GET    /metrics      the same for Prometheus
//
// It needs nothing but Go: the database is a SQLite file (a pure-Go
// driver, no cgo) seeded with -rows users, and the filter lives in this
// process unless -redis names a Redis server to share it in. -filter=false
// leaves the filter out (a cache and a negative cache only), to compare;
// see README.md and the attack command beside it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/bloomery/bloom/guard"
	"github.com/bloomery/bloom/guard/guardprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:8080", "address to listen on")
		dbPath   = flag.String("db", filepath.Join(os.TempDir(), "guard-example.db"), "SQLite database file")
		rows     = flag.Int("rows", 100_000, "users to seed the table with")
		redisURL = flag.String("redis", "", "share the filter in this Redis (redis://host:port/0); default: in process")
		filter   = flag.Bool("filter", true, "put the filter in front (false: cache and negative cache only)")
		p        = flag.Float64("p", 0.01, "the filter's false-positive rate")
		every    = flag.Duration("rebuild-every", 0, "rebuild the filter on this schedule (0: on demand only)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, config{*addr, *dbPath, *rows, *redisURL, *filter, *p, *every}); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	addr, db    string
	rows        int
	redisURL    string
	filter      bool
	p           float64
	rebuildEach time.Duration
}

func run(ctx context.Context, c config) error {
	st, err := openStore(c.db)
	if err != nil {
		return err
	}
	defer st.Close()
	log.Printf("seeding %s with %d users", c.db, c.rows)
	if err := st.seed(ctx, c.rows); err != nil {
		return err
	}
	m, err := membership(c)
	if err != nil {
		return err
	}
	start := time.Now()
	g, err := guard.New(ctx, &guard.Options[User]{
		Load: st.load, IDs: st.ids, Count: st.count, Membership: m,
		FalsePositiveRate: c.p, RebuildEvery: c.rebuildEach,
		OnError: func(err error) { log.Print(err) },
	})
	if err != nil {
		return err
	}
	defer g.Close()
	log.Printf("guard ready in %v (filter: %v)", time.Since(start).Round(time.Millisecond), c.filter)
	reg := prometheus.NewRegistry()
	reg.MustRegister(guardprom.NewCollector("example", "users", g))
	mux := (&service{store: st, g: g}).routes()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Addr: c.addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Printf("listening on http://%s", c.addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// membership is the filter the flags ask for.
func membership(c config) (guard.Membership, error) {
	switch {
	case !c.filter:
		return noFilter{}, nil
	case c.redisURL == "":
		return guard.NewMemory(), nil
	}
	opt, err := redis.ParseURL(c.redisURL)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	return guard.NewRedisFilter(redis.NewClient(opt), "guard-example:users", nil)
}
