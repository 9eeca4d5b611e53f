package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// RedisFilter is a Membership kept in Redis bitmaps by package
// redisfilter (core Redis 6.2 or later, a Redis Cluster too), shared by
// every process that uses the same name. A Test that finds the ID is one
// round trip; one that does not also checks, in one more, that the
// filter it read is still the current generation.
//
// A rebuild is redisfilter's rotation (Filter.Rotate): a new generation
// under new keys, switched to with one atomic change of the metadata.
// Other processes learn of it by comparing their generation with the
// metadata, not by waiting for a refresh. While it runs, a state key in
// the filter's slot says so, and adds go to the current generation and
// to a journal that the rebuild drains into the new one; for the last
// drain the rebuild seals the state, and adds wait (milliseconds) until
// the switch. The state key is the rebuild's claim, with a renewed lease.
//
// The geometry is fixed when the filter is first created, from the first
// rebuild's plan: rotations keep it (Options.Headroom leaves room; see
// redisfilter.Create). The filter's layout, hash key and shard size are
// redisfilter's options, given to NewRedisFilter; pass redisfilter.WithKey
// (the same key in every process) to hash IDs with SipHash.
type RedisFilter struct {
	client  redis.UniversalClient
	name    string
	fopts   []redisfilter.Option
	state   string // "building <token>" or "sealing <token>" while a rebuild runs
	ready   string // exists once a rebuild has completed
	journal string // IDs added while a rebuild runs
	recent  recent // sets of recent adds
	opt     SharedOptions

	mu  sync.Mutex // serialises reopening
	cur atomic.Pointer[generation]
}

// generation is the filter pinned to one generation (no refresh), and
// that generation's metadata text.
type generation struct {
	f    *redisfilter.Filter
	meta string
}

// NewRedisFilter returns the membership kept in Redis under name (the
// metadata key of a redisfilter.Filter, created by the first rebuild).
// fopts configure that filter (redisfilter.WithKey, WithLayout,
// WithShardBytes, WithMaxBytes); WithRefresh is overridden.
func NewRedisFilter(client redis.UniversalClient, name string, opts *SharedOptions, fopts ...redisfilter.Option) (*RedisFilter, error) {
	o, err := opts.withDefaults(1)
	if err != nil {
		return nil, err
	}
	r := &RedisFilter{client: client, name: name, opt: o,
		fopts: append(append([]redisfilter.Option(nil), fopts...), redisfilter.WithRefresh(0))}
	for _, k := range []struct {
		dst    *string
		suffix string
	}{{&r.state, ":guard:state"}, {&r.ready, ":guard:ready"}, {&r.journal, ":guard:journal"}, {&r.recent.prefix, ":guard:recent:"}} {
		if *k.dst, err = sameSlot(name, k.suffix); err != nil {
			return nil, err
		}
	}
	r.recent.window, r.recent.keep = o.RecentWindow, o.RecentWindows
	return r, nil
}

// view is the filter's metadata text ("" if there is no filter), the
// rebuild state ("" if none runs) and whether a rebuild ever completed,
// read together in one MULTI.
type view struct {
	meta, state string
	ready       bool
}

func (r *RedisFilter) view(ctx context.Context, extra func(p redis.Pipeliner)) (view, error) {
	var meta, state *redis.StringCmd
	var ready *redis.IntCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		meta, state, ready = p.Get(ctx, r.name), p.Get(ctx, r.state), p.Exists(ctx, r.ready)
		if extra != nil {
			extra(p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return view{}, fmt.Errorf("guard: read the state of %q: %w", r.name, err)
	}
	return view{meta: meta.Val(), state: state.Val(), ready: ready.Val() == 1}, nil
}

// pinned returns the filter pinned to the generation whose metadata is
// meta, opening it if this process has another one; ok is false if the
// generation changed again meanwhile.
func (r *RedisFilter) pinned(ctx context.Context, meta string) (*generation, bool, error) {
	if g := r.cur.Load(); g != nil && g.meta == meta {
		return g, true, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.cur.Load(); g != nil && g.meta == meta {
		return g, true, nil
	}
	f, err := redisfilter.Open(ctx, r.client, r.name, r.fopts...)
	if err != nil {
		return nil, false, fmt.Errorf("guard: %w", err)
	}
	g := &generation{f: f, meta: f.Meta().String()}
	r.cur.Store(g)
	return g, g.meta == meta, nil
}

// Test reports whether id may be in the filter. An absent answer is
// given only if the generation read is still current and a rebuild has
// completed; otherwise Test reads the current one, or answers true.
func (r *RedisFilter) Test(ctx context.Context, id string) (bool, error) {
	g := r.cur.Load()
	for range 3 {
		if g != nil {
			ok, err := g.f.Exists(ctx, []byte(id))
			if err != nil {
				return false, fmt.Errorf("guard: %w", err)
			}
			if ok {
				return true, nil
			}
		}
		v, err := r.view(ctx, nil)
		if err != nil {
			return false, err
		}
		if !v.ready || v.meta == "" {
			return true, nil
		}
		if g != nil && g.meta == v.meta {
			return false, nil
		}
		if g, _, err = r.pinned(ctx, v.meta); err != nil {
			return false, err
		}
	}
	return true, nil // the filter changes faster than it can be read
}

// Ready reports whether a rebuild has completed and the filter exists.
func (r *RedisFilter) Ready(ctx context.Context) (bool, error) {
	v, err := r.view(ctx, nil)
	return v.ready && v.meta != "", err
}

// Add adds id to the current generation, and to the journal while a
// rebuild runs (waiting while it seals), then runs commit.
func (r *RedisFilter) Add(ctx context.Context, id string, commit func(context.Context) error) error {
	if err := r.add(ctx, id); err != nil {
		return err
	}
	if commit == nil {
		return nil
	}
	return commit(ctx)
}

func (r *RedisFilter) add(ctx context.Context, id string) error {
	rk, ttl := r.recent.key(time.Now())
	record := func(p redis.Pipeliner) { p.SAdd(ctx, rk, id); p.PExpire(ctx, rk, ttl) }
	for {
		v, err := r.view(ctx, record)
		if err != nil || v.meta == "" {
			return err // no filter yet: the rebuild that makes it reads the source after CommitWindow
		}
		if strings.HasPrefix(v.state, "sealing") {
			if err := r.waitState(ctx, v.state); err != nil {
				return err
			}
			continue
		}
		g, _, err := r.pinned(ctx, v.meta)
		if err != nil {
			return err
		}
		if _, err := g.f.Add(ctx, []byte(id)); err != nil {
			return fmt.Errorf("guard: %w", err)
		}
		if v.state == "" {
			return nil
		}
		// A rebuild runs: journal id, and check that it had not sealed.
		after, err := r.view(ctx, func(p redis.Pipeliner) { p.RPush(ctx, r.journal, id) })
		if err != nil {
			return err
		}
		if after.state == v.state && after.meta == v.meta {
			return nil
		}
	}
}

// waitState waits until the rebuild state is no longer state.
func (r *RedisFilter) waitState(ctx context.Context, state string) error {
	for {
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			return err
		}
		now, err := r.client.Get(ctx, r.state).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("guard: read the state of %q: %w", r.name, err)
		}
		if now != state {
			return nil
		}
	}
}

// AddedSince reports whether any process added id since since (or up to
// a window earlier).
func (r *RedisFilter) AddedSince(ctx context.Context, id string, since time.Time) (bool, error) {
	keys := r.recent.keys(since, time.Now())
	cmds, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.SIsMember(ctx, k, id)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("guard: recent adds %q: %w", r.recent.prefix, err)
	}
	for _, c := range cmds {
		if c.(*redis.BoolCmd).Val() {
			return true, nil
		}
	}
	return false, nil
}

// Horizon is how far back AddedSince sees.
func (r *RedisFilter) Horizon() time.Duration { return r.recent.horizon() }

// Rebuild claims the state key, creates the filter if there is none
// (sized by plan), waits the CommitWindow, and rotates it: the new
// generation gets ids and the journal.
func (r *RedisFilter) Rebuild(ctx context.Context, plan Plan, ids iter.Seq2[string, error]) (err error) {
	var raw [8]byte
	rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	building := "building " + token
	ok, err := r.client.SetNX(ctx, r.state, building, r.opt.RebuildLease).Result()
	if err != nil {
		return fmt.Errorf("guard: claim %q: %w", r.state, err)
	}
	if !ok {
		return fmt.Errorf("%w (%q is set)", ErrRebuildRunning, r.state)
	}
	leased, release := holdLease(ctx, r.client, r.state, r.opt.RebuildLease)
	defer func() {
		release()
		if err != nil {
			r.finish(context.WithoutCancel(ctx), token, false)
		}
	}()
	if err := r.client.Del(ctx, r.journal).Err(); err != nil {
		return fmt.Errorf("guard: clear %q: %w", r.journal, err)
	}
	f, err := r.openOrCreate(leased, plan)
	if err != nil {
		return err
	}
	if err := sleep(leased, plan.CommitWindow); err != nil {
		return err
	}
	err = f.Rotate(leased, func(add func([][]byte) error) error {
		return r.fill(leased, token, ids, add)
	})
	if err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	r.cur.Store(&generation{f: f, meta: f.Meta().String()})
	return r.finish(ctx, token, true)
}

func (r *RedisFilter) openOrCreate(ctx context.Context, plan Plan) (*redisfilter.Filter, error) {
	f, err := redisfilter.Open(ctx, r.client, r.name, r.fopts...)
	if errors.Is(err, redisfilter.ErrNotFound) {
		f, err = redisfilter.Create(ctx, r.client, r.name, plan.Capacity, plan.FalsePositiveRate, r.fopts...)
	}
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	return f, nil
}

// fill adds ids, and the journal now and then, to the new generation;
// then it seals the state and drains the journal a last time.
func (r *RedisFilter) fill(ctx context.Context, token string, ids iter.Seq2[string, error], add func([][]byte) error) error {
	batch := make([][]byte, 0, insertBatch)
	flush := func() error {
		if len(batch) > 0 {
			if err := add(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		return r.drain(ctx, add)
	}
	for id, err := range ids {
		if err != nil {
			return err
		}
		if batch = append(batch, []byte(id)); len(batch) == insertBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := r.swapState(ctx, "building "+token, "sealing "+token, false); err != nil {
		return err
	}
	return r.drain(ctx, add)
}

// drain moves the journal's IDs into the new generation.
func (r *RedisFilter) drain(ctx context.Context, add func([][]byte) error) error {
	for {
		ids, err := r.client.LPopCount(ctx, r.journal, insertBatch).Result()
		if errors.Is(err, redis.Nil) || (err == nil && len(ids) == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("guard: drain %q: %w", r.journal, err)
		}
		batch := make([][]byte, len(ids))
		for i, id := range ids {
			batch[i] = []byte(id)
		}
		if err := add(batch); err != nil {
			return err
		}
	}
}

// swapState changes the state from old to new (or deletes it, with
// done, marking the filter ready), if it is still old.
//
// It is one script, not a watched transaction: the lease's renewal
// (PEXPIRE, see holdLease) touches the key without changing its value,
// and would fail a WATCH however often it were retried.
func (r *RedisFilter) swapState(ctx context.Context, old, new string, done bool) error {
	d := "0"
	if done {
		d = "1"
	}
	now, err := swapStateScript.Run(ctx, r.client, []string{r.state, r.journal, r.ready},
		old, new, r.opt.RebuildLease.Milliseconds(), d).Text()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("guard: rebuild state of %q: %w", r.name, err)
	}
	return fmt.Errorf("guard: rebuild state of %q: the rebuild's claim %q was lost (now %q)", r.name, r.state, now)
}

// swapStateScript: KEYS state, journal, ready; ARGV old, new (empty:
// delete state and journal), lease in ms, done ("1": set ready). It
// answers nil when it swapped, else the current state ("" if none).
var swapStateScript = redis.NewScript(`
local now = redis.call('GET', KEYS[1])
if now ~= ARGV[1] then return now or '' end
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return false
end
redis.call('DEL', KEYS[1], KEYS[2])
if ARGV[4] == '1' then redis.call('SET', KEYS[3], '1') end
return false
`)

// finish ends the rebuild token began: ready (ok), or abandoned.
func (r *RedisFilter) finish(ctx context.Context, token string, ok bool) error {
	now, err := r.client.Get(ctx, r.state).Result()
	if err != nil {
		return fmt.Errorf("guard: rebuild state of %q: %w", r.name, err)
	}
	if !strings.HasSuffix(now, " "+token) {
		return fmt.Errorf("guard: rebuild state of %q: the claim was lost (now %q)", r.name, now)
	}
	return r.swapState(ctx, now, "", ok)
}
