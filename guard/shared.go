package guard

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the shared memberships (RedisFilter, BF, CF) have in common: keys
// in the slot of the filter's own key, so that one MULTI can read and
// write them on Redis Cluster too; windows of recent adds for AddedSince;
// and a lease kept alive while a rebuild runs.

// sameSlot returns key+suffix with a hash tag that puts it in key's
// Redis Cluster slot: key's own tag if it has one, else key itself as the
// tag. A key with a '}' but no valid tag has no such name.
func sameSlot(key, suffix string) (string, error) {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + suffix, nil
		}
	}
	if strings.ContainsRune(key, '}') {
		return "", fmt.Errorf("%w: key %q has a '}' but no hash tag; give it one, as in {%s}",
			ErrInvalid, key, strings.ReplaceAll(key, "}", ""))
	}
	return "{" + key + "}" + suffix, nil
}

// SharedOptions configures the memberships that processes share (NewBF,
// NewCF, NewRedisFilter). A nil *SharedOptions takes every default.
type SharedOptions struct {
	// RecentWindow is the span of each record of recent adds, which
	// other processes' negative caches consult (Shared.AddedSince). Adds
	// are kept for RecentWindows windows. default: 1 minute.
	RecentWindow time.Duration
	// RecentWindows is how many windows are kept: Horizon is
	// RecentWindow × (RecentWindows − 1). default: 6.
	RecentWindows int
	// RebuildLease is how long a rebuild's claim lives unless renewed
	// (the rebuild renews it every third of it): if the process
	// rebuilding dies, another may rebuild after that. default: 30
	// seconds.
	RebuildLease time.Duration
	// Expansion is the growth factor of the filters BF.RESERVE and
	// CF.RESERVE make (RedisBloom's EXPANSION). default: 2 for BF.*, 1
	// for CF.* (RedisBloom's defaults).
	Expansion int
}

func (o *SharedOptions) withDefaults(expansion int) (SharedOptions, error) {
	var c SharedOptions
	if o != nil {
		c = *o
	}
	if c.RecentWindow == 0 {
		c.RecentWindow = time.Minute
	}
	if c.RecentWindows == 0 {
		c.RecentWindows = 6
	}
	if c.RebuildLease == 0 {
		c.RebuildLease = 30 * time.Second
	}
	if c.Expansion == 0 {
		c.Expansion = expansion
	}
	switch {
	case c.RecentWindow < time.Millisecond:
		return c, fmt.Errorf("%w: RecentWindow %v below a millisecond", ErrInvalid, c.RecentWindow)
	case c.RecentWindows < 2:
		return c, fmt.Errorf("%w: RecentWindows %d below 2", ErrInvalid, c.RecentWindows)
	case c.RebuildLease < 10*time.Millisecond:
		return c, fmt.Errorf("%w: RebuildLease %v below 10ms", ErrInvalid, c.RebuildLease)
	case c.Expansion < 1:
		return c, fmt.Errorf("%w: Expansion %d below 1", ErrInvalid, c.Expansion)
	}
	return c, nil
}

// recent names the windows of recent adds: one key per RecentWindow of
// wall-clock time, each expiring once it is older than the horizon.
type recent struct {
	prefix string // in the filter key's slot
	window time.Duration
	keep   int
}

func (r recent) horizon() time.Duration { return r.window * time.Duration(r.keep-1) }

func (r recent) index(t time.Time) int64 { return t.UnixNano() / int64(r.window) }

// key is the window holding adds made at t, and its time to live.
func (r recent) key(t time.Time) (string, time.Duration) {
	return r.prefix + strconv.FormatInt(r.index(t), 10), r.window * time.Duration(r.keep+1)
}

// keys are the windows that may hold an add made since since, one window
// earlier for clocks that disagree a little, at most keep+1.
func (r recent) keys(since, now time.Time) []string {
	from, to := r.index(since)-1, r.index(now)
	from = max(from, to-int64(r.keep))
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, r.prefix+strconv.FormatInt(i, 10))
	}
	return out
}

// holdLease renews key's time to live every third of lease until stop is
// called; it cancels the rebuild's context if the key is gone (another
// process may then have taken over).
func holdLease(ctx context.Context, client redis.UniversalClient, key string, lease time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ok, err := client.PExpire(ctx, key, lease).Result()
			if err == nil && !ok {
				cancel(fmt.Errorf("guard: the rebuild's lease %q expired", key))
				return
			}
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}

// isNotFound reports a RedisBloom "not found" reply (NOCREATE on a
// missing key).
func isNotFound(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "not found")
}
