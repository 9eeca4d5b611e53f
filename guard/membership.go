package guard

import (
	"context"
	"iter"
	"time"
)

// Membership is the filter of existing IDs that a Guard asks first: a
// set that may answer "present" for an ID that does not exist (a false
// positive) but never "absent" for one that does.
//
// The package has memberships in this process (NewMemory,
// NewMemoryScalable, NewMemoryCounting), in Redis bitmaps shared by every
// instance of a service (NewRedisFilter), and on any server speaking
// RedisBloom's BF.* or CF.* commands (NewBF, NewCF).
// A membership that can delete also implements Deleter; one that other
// processes share also implements Shared.
//
// Implementations must be safe for concurrent use, and must keep this
// promise: once Add(ctx, id, commit) has returned without error, and for
// as long as the source of truth holds id, Test(ctx, id) reports true,
// also across Rebuild (see Rebuild for what the caller promises in
// return).
type Membership interface {
	// Test reports whether id may exist. An error means the membership
	// could not answer; the Guard then asks the source (it fails open).
	Test(ctx context.Context, id string) (bool, error)

	// Add records id, then runs commit, the caller's write of id to the
	// source, if commit is not nil, and returns its error. A rebuild
	// that starts while commit runs either sees id in the source or has
	// id added to the new filter too. With a nil commit the caller
	// writes id itself, after Add returns and within the Plan's
	// CommitWindow.
	Add(ctx context.Context, id string, commit func(context.Context) error) error

	// Rebuild replaces the membership's contents with the IDs that ids
	// yields, in a new filter sized by plan, and switches to it at once:
	// before the switch every answer comes from the old filter, after it
	// from the new one, and IDs added while the rebuild runs are in both.
	// Writes that began before the rebuild and have not committed when
	// it reads the source are waited for (exactly for Add with a commit
	// in this process; for CommitWindow otherwise). On error the old
	// filter stays.
	Rebuild(ctx context.Context, plan Plan, ids iter.Seq2[string, error]) error

	// Ready reports whether the membership holds a complete set: false
	// before its first Rebuild (or, for a shared one, before any process
	// completed one). A Guard whose membership is not ready fills it at
	// New.
	Ready(ctx context.Context) (bool, error)
}

// Deleter is implemented by memberships that can delete an ID (counting
// and cuckoo filters). Remove must be called only for an ID that was
// added and whose deletion from the source has just committed (within
// the CommitWindow): removing an ID that is not in the filter can remove
// another ID's trace. Remove reports whether it deleted; it declines
// (false, nil) when the filter was rebuilt so recently that id may not be
// in it, leaving a false positive that the next rebuild sheds.
type Deleter interface {
	Remove(ctx context.Context, id string) (bool, error)
}

// Shared is implemented by memberships that several processes use at
// once. Their Guards cannot see each other's writes in their own negative
// caches, so before answering ErrNotFound from a negative-cache entry a
// Guard asks AddedSince whether id was added anywhere since the entry's
// load began (a false "true" only costs a load). Horizon is how far back
// AddedSince can see; a Guard refuses a NegativeTTL (plus CommitWindow)
// beyond it.
type Shared interface {
	AddedSince(ctx context.Context, id string, since time.Time) (bool, error)
	Horizon() time.Duration
}

// Plan is what a rebuild builds: a filter for Capacity IDs at a false
// positive rate of at most FalsePositiveRate, and the time within which
// a writer commits after adding (see Membership.Add).
type Plan struct {
	Capacity          uint64
	FalsePositiveRate float64
	CommitWindow      time.Duration
}
