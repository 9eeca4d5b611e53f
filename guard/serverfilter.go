package guard

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// BF is a Membership on any server speaking RedisBloom's BF.* commands
// (bloomery serve, Redis with RedisBloom, Redis 8), shared by every
// process that uses the same key. Test is one round trip (BF.EXISTS and
// EXISTS, pipelined); Add is one MULTI, and two more commands while a
// rebuild runs.
//
// A rebuild reserves a new filter under a temporary key in the same
// cluster slot (key's hash tag, or key itself as the tag), fills it while
// adds go to both filters, and renames it over key in one MULTI, so
// readers switch at once. Only one process rebuilds at a time: the
// temporary key is the claim, with a time to live renewed while the
// rebuild runs. The server must support MULTI, EXISTS, PEXPIRE, PERSIST
// and RENAME besides the filter commands (bloomery serve does).
//
// The filter is never created by an add (adds use INSERT … NOCREATE):
// until the first rebuild completes the membership is not Ready and
// answers "may exist" to every Test.
type BF struct{ serverFilter }

// CF is BF on RedisBloom's cuckoo filters (CF.*), which can delete
// (CF.DEL): it implements Deleter. Its false-positive rate is the
// server's (about 3% at RedisBloom's bucket size 2), not the Plan's;
// the Plan's capacity sizes it.
type CF struct{ serverFilter }

// NewBF returns the BF.* membership kept under key on client's server.
func NewBF(client redis.UniversalClient, key string, opts *SharedOptions) (*BF, error) {
	s, err := newServerFilter(client, key, opts, bloomCommands)
	if err != nil {
		return nil, err
	}
	return &BF{s}, nil
}

// NewCF returns the CF.* membership kept under key on client's server.
func NewCF(client redis.UniversalClient, key string, opts *SharedOptions) (*CF, error) {
	s, err := newServerFilter(client, key, opts, cuckooCommands)
	if err != nil {
		return nil, err
	}
	return &CF{s}, nil
}

// commands are one filter family's command names.
type commands struct {
	insert, exists string
	expansion      int // RedisBloom's default
	reserve        func(key string, plan Plan, expansion int) []any
}

var (
	bloomCommands = commands{insert: "BF.INSERT", exists: "BF.EXISTS", expansion: 2,
		reserve: func(key string, p Plan, e int) []any {
			return []any{"BF.RESERVE", key, p.FalsePositiveRate, p.Capacity, "EXPANSION", e}
		}}
	cuckooCommands = commands{insert: "CF.INSERT", exists: "CF.EXISTS", expansion: 1,
		reserve: func(key string, p Plan, e int) []any {
			return []any{"CF.RESERVE", key, p.Capacity, "EXPANSION", e}
		}}
)

// serverFilter is BF and CF.
type serverFilter struct {
	client   redis.UniversalClient
	cmd      commands
	key      string
	next     string // the filter a rebuild fills
	switched string // exists for a CommitWindow after a rebuild's rename
	recent   recent
	opt      SharedOptions
}

// recentCapacity sizes each window's filter of recent adds.
const recentCapacity = 10000

func newServerFilter(client redis.UniversalClient, key string, opts *SharedOptions, cmd commands) (serverFilter, error) {
	o, err := opts.withDefaults(cmd.expansion)
	if err != nil {
		return serverFilter{}, err
	}
	s := serverFilter{client: client, cmd: cmd, key: key, opt: o}
	for _, k := range []struct {
		dst    *string
		suffix string
	}{{&s.next, ":guard:next"}, {&s.switched, ":guard:switched"}, {&s.recent.prefix, ":guard:recent:"}} {
		if *k.dst, err = sameSlot(key, k.suffix); err != nil {
			return serverFilter{}, err
		}
	}
	s.recent.window, s.recent.keep = o.RecentWindow, o.RecentWindows
	return s, nil
}

// Test reports whether id may be in the filter; while the filter does not
// exist (before the first rebuild, or deleted), true.
func (s *serverFilter) Test(ctx context.Context, id string) (bool, error) {
	var found *redis.Cmd
	var exists *redis.IntCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		found = p.Do(ctx, s.cmd.exists, s.key, id)
		exists = p.Exists(ctx, s.key)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("guard: %s %q: %w", s.cmd.exists, s.key, err)
	}
	ok, err := found.Bool()
	if err != nil {
		return false, fmt.Errorf("guard: %s %q: %w", s.cmd.exists, s.key, err)
	}
	return ok || exists.Val() == 0, nil
}

// Ready reports whether the filter exists.
func (s *serverFilter) Ready(ctx context.Context) (bool, error) {
	n, err := s.client.Exists(ctx, s.key).Result()
	if err != nil {
		return false, fmt.Errorf("guard: exists %q: %w", s.key, err)
	}
	return n == 1, nil
}

// Add inserts id into the filter and records it in the window of recent
// adds, in one MULTI that also tells whether a rebuild runs; if one does,
// id goes into the filter it fills too, and then into key again, in case
// the rebuild renamed its filter over key meanwhile. Then commit runs.
func (s *serverFilter) Add(ctx context.Context, id string, commit func(context.Context) error) error {
	rk, ttl := s.recent.key(time.Now())
	var ins *redis.Cmd
	var building *redis.IntCmd
	cmds, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ins = p.Do(ctx, s.cmd.insert, s.key, "NOCREATE", "ITEMS", id)
		building = p.Exists(ctx, s.next)
		p.Do(ctx, "BF.INSERT", rk, "CAPACITY", recentCapacity, "ERROR", 0.01, "ITEMS", id)
		p.PExpire(ctx, rk, ttl)
		return nil
	})
	if err != nil {
		if err := firstErr(cmds, ins, err); err != nil {
			return fmt.Errorf("guard: add to %q: %w", s.key, err)
		}
	}
	if building.Val() == 1 {
		for _, k := range []string{s.next, s.key} {
			if err := s.client.Do(ctx, s.cmd.insert, k, "NOCREATE", "ITEMS", id).Err(); err != nil && !isNotFound(err) {
				return fmt.Errorf("guard: add to %q: %w", k, err)
			}
		}
	}
	if commit == nil {
		return nil
	}
	return commit(ctx)
}

// firstErr is the first error among cmds other than skip's "not found",
// or the transaction's error err if no command has one.
func firstErr(cmds []redis.Cmder, skip redis.Cmder, err error) error {
	for _, c := range cmds {
		if e := c.Err(); e != nil && !(c == skip && isNotFound(e)) {
			return e
		}
	}
	if skip.Err() == err {
		return nil
	}
	return err
}

// insertBatch is the IDs per INSERT command of a rebuild.
const insertBatch = 1000

// Rebuild reserves the next filter (the claim), waits the CommitWindow
// for writes that did not see it, fills it from ids, and renames it over
// key.
func (s *serverFilter) Rebuild(ctx context.Context, plan Plan, ids iter.Seq2[string, error]) (err error) {
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, s.cmd.reserve(s.next, plan, s.opt.Expansion)...)
		p.PExpire(ctx, s.next, s.opt.RebuildLease)
		return nil
	})
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "exists") {
			return fmt.Errorf("%w (%q exists)", ErrRebuildRunning, s.next)
		}
		return fmt.Errorf("guard: reserve %q: %w", s.next, err)
	}
	leased, release := holdLease(ctx, s.client, s.next, s.opt.RebuildLease)
	defer func() {
		release()
		if err != nil {
			s.client.Del(context.WithoutCancel(ctx), s.next)
		}
	}()
	if err := sleep(leased, plan.CommitWindow); err != nil {
		return err
	}
	if err := s.fill(leased, ids); err != nil {
		return err
	}
	release()
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Persist(ctx, s.next)
		p.Rename(ctx, s.next, s.key)
		p.Do(ctx, "BF.INSERT", s.switched, "CAPACITY", 1, "ITEMS", "x")
		p.PExpire(ctx, s.switched, max(plan.CommitWindow, time.Millisecond))
		return nil
	})
	if err != nil {
		return fmt.Errorf("guard: rename %q to %q: %w", s.next, s.key, err)
	}
	return nil
}

// fill inserts ids into the next filter, insertBatch per command.
func (s *serverFilter) fill(ctx context.Context, ids iter.Seq2[string, error]) error {
	args := make([]any, 0, 4+insertBatch)
	flush := func() error {
		if len(args) == 4 {
			return nil
		}
		err := s.client.Do(ctx, args...).Err()
		args = args[:4]
		if err != nil {
			return fmt.Errorf("guard: fill %q: %w", s.next, err)
		}
		return nil
	}
	args = append(args, s.cmd.insert, s.next, "NOCREATE", "ITEMS")
	for id, err := range ids {
		if err != nil {
			return err
		}
		if args = append(args, id); len(args) == cap(args) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// AddedSince reports whether any process added id since since (or up to
// a window earlier).
func (s *serverFilter) AddedSince(ctx context.Context, id string, since time.Time) (bool, error) {
	keys := s.recent.keys(since, time.Now())
	cmds, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Do(ctx, "BF.EXISTS", k, id)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("guard: recent adds %q: %w", s.recent.prefix, err)
	}
	for _, c := range cmds {
		if ok, _ := c.(*redis.Cmd).Bool(); ok {
			return true, nil
		}
	}
	return false, nil
}

// Horizon is how far back AddedSince sees.
func (s *serverFilter) Horizon() time.Duration { return s.recent.horizon() }

// Remove deletes id with CF.DEL, unless a rebuild runs or renamed its
// filter over key less than a CommitWindow ago (the new filter may not
// hold id then). It reports whether it deleted.
func (c *CF) Remove(ctx context.Context, id string) (bool, error) {
	var next, switched *redis.IntCmd
	_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		next = p.Exists(ctx, c.next)
		switched = p.Exists(ctx, c.switched)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("guard: remove from %q: %w", c.key, err)
	}
	if next.Val()+switched.Val() > 0 {
		return false, nil
	}
	deleted, err := c.client.Do(ctx, "CF.DEL", c.key, id).Bool()
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("guard: CF.DEL %q: %w", c.key, err)
	}
	return deleted, nil
}
