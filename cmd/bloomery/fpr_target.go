package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// The filters fpr measures: in memory, in Redis through redisfilter, and
// on a bloomery server (or RedisBloom) through BF.* commands.

// fprTarget is a parsed --target: "memory" (url nil) or a URL.
type fprTarget struct {
	url *filterURL
}

func parseFprTarget(s string) (fprTarget, error) {
	if s == "memory" {
		return fprTarget{}, nil
	}
	fu, err := parseFilterURL("--target", s, false)
	if err != nil {
		return fprTarget{}, err
	}
	return fprTarget{url: &fu}, nil
}

// open creates the filter for cfg.
func (t fprTarget) open(ctx context.Context, cfg fprConfig) (fprFilter, error) {
	sz, err := bloom.Size(cfg.n, cfg.p, cfg.layout)
	if err != nil {
		return nil, usageErrorf("no %s filter for -n %d at -p %g: %v", cfg.layout, cfg.n, cfg.p, err)
	}
	if t.url == nil {
		f, err := bloom.NewSized(sz)
		if err != nil {
			return nil, fmt.Errorf("making the filter: %w", err)
		}
		return memoryFpr{f}, nil
	}
	name := t.url.name
	if name == "" {
		var b [6]byte
		rand.Read(b[:])
		name = "bloomery-fpr:" + hex.EncodeToString(b[:])
	}
	client := t.url.client()
	where := t.url.where(name)
	exists := func() error {
		client.Close()
		return fmt.Errorf("%s exists: fpr makes a new filter and never touches an existing key", where)
	}
	if t.url.server {
		err := client.BFReserve(ctx, name, cfg.p, int64(min(cfg.n, 1<<62))).Err()
		if err != nil && err.Error() == "ERR item exists" {
			return nil, exists()
		}
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("BF.RESERVE at %s: %w", where, err)
		}
		return &serverFpr{client: client, name: name, where: where, p: cfg.p}, nil
	}
	f, err := redisfilter.Create(ctx, client, name, cfg.n, cfg.p, redisfilter.WithLayout(cfg.layout))
	if errors.Is(err, redisfilter.ErrExists) {
		return nil, exists()
	}
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("creating the filter at %s: %w", where, err)
	}
	return &redisFpr{f: f, client: client, where: where}, nil
}

// describeSizing describes a filter's geometry.
func describeSizing(s bloom.Sizing) string {
	return fmt.Sprintf("%s layout, %d bits (%s), k %d", s.Layout, s.Bits, humanBytes(s.Bytes()), s.K)
}

// memoryFpr is a bloom.Filter in this process.
type memoryFpr struct{ f *bloom.Filter }

func (m memoryFpr) describe() string { return "memory: " + describeSizing(m.f.Sizing()) }

func (m memoryFpr) add(_ context.Context, items [][]byte) error {
	for _, it := range items {
		m.f.Add(it)
	}
	return nil
}

func (m memoryFpr) count(_ context.Context, items [][]byte) (uint64, error) {
	var c uint64
	for _, it := range items {
		if m.f.Test(it) {
			c++
		}
	}
	return c, nil
}

func (m memoryFpr) model() (float64, bool)      { s := m.f.Sizing(); return s.FPRAt(s.N), true }
func (m memoryFpr) close(context.Context) error { return nil }

// redisFpr is a redisfilter.Filter, deleted by close.
type redisFpr struct {
	f      *redisfilter.Filter
	client *redis.Client
	where  string
}

func (r *redisFpr) describe() string { return r.where + ": " + describeSizing(r.f.Sizing()) }

func (r *redisFpr) add(ctx context.Context, items [][]byte) error {
	_, err := r.f.AddMany(ctx, items)
	return err
}

func (r *redisFpr) count(ctx context.Context, items [][]byte) (uint64, error) {
	found, err := r.f.ExistsMany(ctx, items)
	return countTrue(found), err
}

func (r *redisFpr) model() (float64, bool) { s := r.f.Sizing(); return s.FPRAt(s.N), true }

func (r *redisFpr) close(ctx context.Context) error {
	err := r.f.Delete(ctx)
	r.client.Close()
	if err != nil {
		return fmt.Errorf("deleting the filter at %s: %w", r.where, err)
	}
	return nil
}

// serverFpr is a filter made with BF.RESERVE, deleted by close.
type serverFpr struct {
	client *redis.Client
	name   string
	where  string
	p      float64
}

// serverCommandItems is the items per BF.MADD or BF.MEXISTS; a batch is
// several such commands in one pipeline.
const serverCommandItems = 1024

func (s *serverFpr) describe() string {
	info, err := s.client.BFInfo(context.Background(), s.name).Result()
	if err != nil {
		return s.where
	}
	return fmt.Sprintf("%s: BF.RESERVE %g %d, %d filter(s), %s", s.where, s.p, info.Capacity,
		info.Filters, humanBytes(uint64(max(info.Size, 0))))
}

func (s *serverFpr) add(ctx context.Context, items [][]byte) error {
	_, err := s.pipeline(ctx, items, true)
	return err
}

func (s *serverFpr) count(ctx context.Context, items [][]byte) (uint64, error) {
	return s.pipeline(ctx, items, false)
}

// pipeline sends items as BF.MADD (add) or BF.MEXISTS commands of
// serverCommandItems each, in one round trip, and counts the replies
// that are true.
func (s *serverFpr) pipeline(ctx context.Context, items [][]byte, add bool) (uint64, error) {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.BoolSliceCmd, 0, len(items)/serverCommandItems+1)
	args := make([]any, len(items))
	for i, it := range items {
		args[i] = it
	}
	for lo := 0; lo < len(args); lo += serverCommandItems {
		part := args[lo:min(lo+serverCommandItems, len(args))]
		if add {
			cmds = append(cmds, pipe.BFMAdd(ctx, s.name, part...))
		} else {
			cmds = append(cmds, pipe.BFMExists(ctx, s.name, part...))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		verb := "BF.MEXISTS"
		if add {
			verb = "BF.MADD"
		}
		return 0, fmt.Errorf("%s at %s: %w", verb, s.where, err)
	}
	var c uint64
	for _, cmd := range cmds {
		c += countTrue(cmd.Val())
	}
	return c, nil
}

func (s *serverFpr) model() (float64, bool) { return 0, false }

func (s *serverFpr) close(ctx context.Context) error {
	err := s.client.Del(ctx, s.name).Err()
	s.client.Close()
	if err != nil {
		return fmt.Errorf("deleting the filter at %s: %w", s.where, err)
	}
	return nil
}

// countTrue counts the true values of b.
func countTrue(b []bool) uint64 {
	var c uint64
	for _, v := range b {
		if v {
			c++
		}
	}
	return c
}
