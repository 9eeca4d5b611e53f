package redisfilter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// TestIsScalable: only a scalable filter's metadata counts (of either
// format: "sf" has small classic sub-filters, "uniform" not); missing
// keys, other types, plain hashes, a Filter and a sub-filter's bitmap do
// not.
func TestIsScalable(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "sf", 100, 0.01, bloom.Growth{})
	mustCreateScalable(t, c, "uniform", 100, 0.01, bloom.Growth{UniformLayout: true})
	mustCreate(t, c, "plain-filter", 1000, 0.01)
	c.Set(ctx, "str", "x", 0)
	c.HSet(ctx, "hash", "format", "something else")
	c.RPush(ctx, "list", "x")
	want := map[string]bool{"sf": true, "uniform": true, s.view().subKey(0): false, "plain-filter": false, "str": false,
		"hash": false, "list": false, "missing": false}
	for name, w := range want {
		got, err := IsScalable(CheckScalable(ctx, c, name))
		if got != w || err != nil {
			t.Errorf("IsScalable(%q) = %v, %v; want %v", name, got, err, w)
		}
	}
	c.Close()
	if _, err := IsScalable(CheckScalable(ctx, c, "sf")); err == nil {
		t.Error("IsScalable on a closed client: no error")
	}
}

// TestOpenScalableInfo: one round trip, the same answers as OpenScalable
// and Info, and their errors.
func TestOpenScalableInfo(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "oi", 100, 0.01, bloom.Growth{RedisBloom: true})
	if _, err := s.AddMany(ctx, items("x", 0, 150)); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, c)
	o, in, err := OpenScalableInfo(ctx, c, "oi")
	if err != nil {
		t.Fatal(err)
	}
	after := commandCalls(t, c)
	if after["hgetall"]-before["hgetall"] != 1 || after["pttl"]-before["pttl"] != 1 {
		t.Errorf("commands: %v then %v", before, after)
	}
	if in.Items != 150 || in.Filters != 2 || in.Capacity != 300 {
		t.Errorf("info %+v", in.ScalableInfo)
	}
	allPresent(t, o, items("x", 0, 150))
	c.Set(ctx, "str", "x", 0)
	for name, want := range map[string]error{"missing": ErrNotFound, "str": ErrMetadata} {
		if _, _, err := OpenScalableInfo(ctx, c, name); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
}

// TestScalableExpireAt: Redis's conditions and answers on every key of
// the filter, sub-filters opened later included; a past time deletes the
// filter; Persist reports whether there was an expiry; a stale view is
// re-read first.
func TestScalableExpireAt(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "ex", 10, 0.01, bloom.Growth{})
	stale, err := OpenScalable(ctx, c, "ex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMany(ctx, items("x", 0, 50)); err != nil { // grows: stale has not seen it
		t.Fatal(err)
	}
	hour := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	steps := []struct {
		at   time.Time
		cond ExpireCondition
		want bool
	}{
		{hour, ExpireXX, false}, {hour, ExpireGT, false}, {hour, ExpireNX, true}, {hour.Add(time.Minute), ExpireNX, false},
		{hour.Add(-time.Minute), ExpireGT, false}, {hour.Add(time.Minute), ExpireGT, true},
		{hour.Add(2 * time.Minute), ExpireLT, false}, {hour, ExpireLT, true}, {hour, ExpireXX, true},
	}
	for i, st := range steps {
		if got, err := stale.ExpireAt(ctx, st.at, st.cond); got != st.want || err != nil {
			t.Fatalf("step %d: ExpireAt(%v, %q) = %v, %v; want %v", i, st.at, st.cond, got, err, st.want)
		}
	}
	in := mustInfo(t, s)
	keys := append([]string{"ex"}, subKeys(in)...)
	if len(keys) < 3 {
		t.Fatalf("%d keys", len(keys))
	}
	for _, k := range keys {
		if at := c.PExpireTime(ctx, k).Val(); at != time.Duration(hour.UnixMilli())*time.Millisecond {
			t.Errorf("%s expires at %v, want %v", k, at, hour.UnixMilli())
		}
	}
	if _, err := s.AddMany(ctx, items("y", 0, 500)); err != nil { // opens sub-filters: they get the metadata's time
		t.Fatal(err)
	}
	for _, sub := range mustInfo(t, s).Subs {
		if ttl := c.PTTL(ctx, sub.Key).Val(); ttl < 59*time.Minute {
			t.Errorf("%s: ttl %v", sub.Key, ttl)
		}
	}
	if done, err := s.Persist(ctx); !done || err != nil {
		t.Errorf("Persist: %v, %v", done, err)
	}
	if done, err := s.Persist(ctx); done || err != nil {
		t.Errorf("Persist without expiry: %v, %v", done, err)
	}
	for _, sub := range mustInfo(t, s).Subs {
		if ttl := c.PTTL(ctx, sub.Key).Val(); ttl != -1 {
			t.Errorf("%s after Persist: ttl %v", sub.Key, ttl)
		}
	}
	if done, err := s.ExpireAt(ctx, time.Now().Add(-time.Second), ExpireAlways); !done || err != nil {
		t.Fatalf("ExpireAt in the past: %v, %v", done, err)
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left after ExpireAt in the past", n)
	}
	if _, err := s.ExpireAt(ctx, hour, ExpireAlways); !errors.Is(err, ErrNotFound) {
		t.Errorf("ExpireAt of a deleted filter: %v", err)
	}
	if _, err := s.Persist(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Persist of a deleted filter: %v", err)
	}
	c.Set(ctx, "ex", "now a string", 0)
	if _, err := s.ExpireAt(ctx, hour, ExpireAlways); !errors.Is(err, ErrMetadata) {
		t.Errorf("ExpireAt of a string key: %v", err)
	}
}
