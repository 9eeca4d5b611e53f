package redisfilter

import (
	"context"
	"fmt"

	"github.com/bloomery/bloom/cuckoo"
)

// CuckooInsert says how Cuckoo.Insert treats its items and a missing
// filter.
type CuckooInsert struct {
	_ struct{}
	// Unique stores only the items that test absent (CF.INSERTNX); an
	// item sees the ones before it.
	Unique bool
	// CreateCapacity, if not 0, makes a missing filter of this capacity
	// with the handle's options, in the same atomic call (CF.INSERT
	// without NOCREATE); 0 leaves a missing filter ErrNotFound.
	CreateCapacity uint64
	// MaxFilters, if not 0, refuses the whole call with ErrMaxFilters
	// when the filter has this many sub-filters or more, checked once,
	// before the first item (RedisBloom's cf-max-expansions).
	MaxFilters uint64
}

// Insert inserts items in order, as cuckoo.Filter.AddMany (or, with
// o.Unique, AddUniqueMany) does, and returns each item's outcome:
// cuckoo.Inserted, cuckoo.Exists (Unique only), cuckoo.NoSpace (a full
// filter that does not grow) or cuckoo.GrowFailed (a growth past
// WithMaxBytes or the sub-filter limits); a failed item changes nothing
// and does not stop the others. One script call per 2048 items. The
// error is for the call as a whole (ErrNotFound, ErrMetadata for a key
// of another kind, ErrMaxFilters, a Redis error): the outcomes returned
// with it are those of the batches done before.
func (c *Cuckoo) Insert(ctx context.Context, items [][]byte, o CuckooInsert) ([]cuckoo.Status, error) {
	mode := "add"
	if o.Unique {
		mode = "nx"
	}
	var create []any
	if o.CreateCapacity != 0 {
		var err error
		if create, err = c.newFields(o.CreateCapacity); err != nil {
			return nil, err
		}
	}
	out := make([]cuckoo.Status, 0, len(items))
	err := batches(items, func(from int, batch [][]byte) error {
		refuseAt := o.MaxFilters
		if from > 0 {
			refuseAt = 0
		}
		args := append([]any{mode, utoa(c.maxBytes), utoa(refuseAt), packHashes(batch)}, create...)
		v, err := c.run(ctx, "insert into", cuckooInsert, args...)
		if err == nil {
			err = ints(v, len(batch), func(_ int, x int64) { out = append(out, cuckoo.Status(x)) })
		}
		return err
	})
	return out, err
}

// AddMany adds every item, duplicates too, as CF.INSERT does on an
// existing filter, and returns each one's outcome (see Insert).
func (c *Cuckoo) AddMany(ctx context.Context, items [][]byte) ([]cuckoo.Status, error) {
	return c.Insert(ctx, items, CuckooInsert{})
}

// Add adds item, as CF.ADD does: a duplicate is stored again. It returns
// an error wrapping cuckoo.ErrFull when there is no room in a filter
// that does not grow, cuckoo.ErrTooLarge when growing would pass the
// limits (the filter is unchanged then). One round trip.
func (c *Cuckoo) Add(ctx context.Context, item []byte) error {
	st, err := c.Insert(ctx, [][]byte{item}, CuckooInsert{})
	if err != nil {
		return err
	}
	return statusErr(c.name, st[0])
}

// AddUnique adds item unless it tests present, as CF.ADDNX does, and
// reports whether it stored it (an item that tests present by a false
// positive is not stored). Errors as Add.
func (c *Cuckoo) AddUnique(ctx context.Context, item []byte) (bool, error) {
	st, err := c.Insert(ctx, [][]byte{item}, CuckooInsert{Unique: true})
	if err != nil {
		return false, err
	}
	return st[0] == cuckoo.Inserted, statusErr(c.name, st[0])
}

func statusErr(name string, st cuckoo.Status) error {
	if err := st.Err(); err != nil {
		return fmt.Errorf("redisfilter: add to %q: %w", name, err)
	}
	return nil
}

// TestMany reports for each item whether it may be in the filter, as
// CF.MEXISTS does: no false negatives for items added and not deleted.
// One script call per 2048 items.
func (c *Cuckoo) TestMany(ctx context.Context, items [][]byte) ([]bool, error) {
	out := make([]bool, len(items))
	err := batches(items, func(from int, batch [][]byte) error {
		v, err := c.run(ctx, "test", cuckooRead, "test", packHashes(batch))
		if err == nil {
			err = ints(v, len(batch), func(i int, x int64) { out[from+i] = x == 1 })
		}
		return err
	})
	return out, err
}

// Test reports whether item may be in the filter (CF.EXISTS). It may
// return a false positive, never a false negative for an item added and
// not deleted.
func (c *Cuckoo) Test(ctx context.Context, item []byte) (bool, error) {
	r, err := c.TestMany(ctx, [][]byte{item})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// CountMany counts each item's fingerprint in its buckets, as CF.COUNT
// does (see cuckoo.Filter.CountHash).
func (c *Cuckoo) CountMany(ctx context.Context, items [][]byte) ([]uint64, error) {
	out := make([]uint64, len(items))
	err := batches(items, func(from int, batch [][]byte) error {
		v, err := c.run(ctx, "count", cuckooRead, "count", packHashes(batch))
		if err == nil {
			err = ints(v, len(batch), func(i int, x int64) { out[from+i] = uint64(x) })
		}
		return err
	})
	return out, err
}

// Count is CountMany of one item (CF.COUNT): the copies added and not
// deleted, plus other items' colliding fingerprints.
func (c *Cuckoo) Count(ctx context.Context, item []byte) (uint64, error) {
	r, err := c.CountMany(ctx, [][]byte{item})
	if err != nil {
		return 0, err
	}
	return r[0], nil
}

// DeleteMany deletes one copy of each item, in order, as CF.DEL does, and
// reports for each whether it found one; a delete may compact the filter
// (see cuckoo.Filter.DeleteHash). Delete only items that were added: the
// copy removed may be another item's with the same fingerprint and
// buckets. One script call per 2048 items.
func (c *Cuckoo) DeleteMany(ctx context.Context, items [][]byte) ([]bool, error) {
	out := make([]bool, len(items))
	err := batches(items, func(from int, batch [][]byte) error {
		v, err := c.run(ctx, "delete from", cuckooDelete, packHashes(batch))
		if err == nil {
			err = ints(v, len(batch), func(i int, x int64) { out[from+i] = x == 1 })
		}
		return err
	})
	return out, err
}

// Delete deletes one copy of item (CF.DEL) and reports whether there was
// one (see DeleteMany).
func (c *Cuckoo) Delete(ctx context.Context, item []byte) (bool, error) {
	r, err := c.DeleteMany(ctx, [][]byte{item})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// Compact moves every fingerprint it can into older sub-filters and frees
// the newest ones it empties, as CF.COMPACT does (one script call; its
// work is proportional to the sub-filters' size).
func (c *Cuckoo) Compact(ctx context.Context) error {
	_, err := c.run(ctx, "compact", cuckooCompact)
	return err
}
