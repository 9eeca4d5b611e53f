package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// newPushCmd is "bloomery push": copy a filter file into Redis or a
// bloomery server.
func newPushCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "push FILTER redis://host:port/db/name | bloomery://host:port/name",
		Short: "Copy a filter file into Redis or a bloomery server",
		Long: `push copies the filter in the file FILTER to a key:

  redis://host:port/db/name    a fixed-size filter (file kind 1, as build
                               writes) becomes a redisfilter.Filter called
                               name, with the same bits: redisfilter.Open
                               and BITFIELD readers answer as the file does
  bloomery://host:port/name    a scalable filter (file kind 2, as dedup
                               --state writes) is loaded into a running
                               bloomery serve with BF.LOADCHUNK, as
                               BF.SCANDUMP wrote it

push never overwrites an existing key unless --force is given. With
--force, a fixed-size filter of the same geometry in Redis is replaced
atomically (a new generation, switched with one compare-and-set, as
redisfilter's RotateFrom does); any other filter at the key is deleted
first, so readers briefly find no filter. A key holding anything but a
filter is never replaced.

On a terminal, push shows its progress on standard error. Keyed filters
(WithKey) cannot be pushed: the key is not in the file.`,
		Example: `  # Build a filter offline and serve it from Redis:
  bloomery build -n 1e6 -p 0.01 -o urls.bloom urls.txt
  bloomery push urls.bloom redis://127.0.0.1:6379/0/urls

  # Replace it with a new build:
  bloomery push --force urls.bloom redis://127.0.0.1:6379/0/urls

  # A scalable filter onto a bloomery server (password s3cret):
  bloomery push seen.bloom bloomery://:s3cret@127.0.0.1:6380/seen`,
		Args: exactArgs(2, "FILTER and a destination URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dst, err := parseFilterURL("destination", args[1], true)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runPush(ctx, cmd.ErrOrStderr(), args[0], dst, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace the filter at the destination if there is one")
	return cmd
}

// exactArgs is cobra.ExactArgs returning a usage error that says what
// the arguments are.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s, got %d argument(s)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// kindNames describes each file kind in messages.
var kindNames = map[bloom.Kind]string{
	bloom.KindFilter:   "a fixed-size filter (kind 1)",
	bloom.KindScalable: "a scalable filter (kind 2)",
	bloom.KindCounting: "a counting filter (kind 3)",
	bloom.KindCuckoo:   "a cuckoo filter (kind 4)",
}

// runPush copies the filter file path to dst. It reads the file once, so
// path may be a pipe.
func runPush(ctx context.Context, stderr io.Writer, path string, dst filterURL, force bool) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	var (
		f *bloom.Filter
		s *bloom.Scalable
	)
	if dst.server {
		s, err = bloom.LoadScalable(file)
	} else {
		f, err = bloom.Load(file)
	}
	var wrongKind *bloom.KindError
	switch {
	case errors.As(err, &wrongKind):
		return wrongKindError(path, wrongKind.Got, dst)
	case errors.Is(err, bloom.ErrKeyRequired):
		return fmt.Errorf("%s is keyed (SipHash with a secret key): push cannot recreate it without its key, which is not in the file", path)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	}
	client := dst.client()
	defer client.Close()
	if dst.server {
		return pushScalable(ctx, client, stderr, s, dst, force)
	}
	return pushFilter(ctx, client, stderr, f, dst, force)
}

// wrongKindError says why a file of kind cannot go to dst, and where it
// could.
func wrongKindError(path string, kind bloom.Kind, dst filterURL) error {
	name, ok := kindNames[kind]
	if !ok {
		name = fmt.Sprintf("a filter of unknown %s", kind)
	}
	takes, hint := "redis:// takes fixed-size filters (kind 1)", ""
	if dst.server {
		takes = "bloomery:// takes scalable filters (kind 2, the BF.SCANDUMP format)"
	}
	switch {
	case dst.server && kind == bloom.KindFilter:
		hint = "; push it to redis://host:port/db/name"
	case !dst.server && kind == bloom.KindScalable:
		hint = "; push it to bloomery://host:port/name"
	}
	return fmt.Errorf("%s is %s: %s%s", path, name, takes, hint)
}

// pushFilter creates the redisfilter dst.name from f, replacing a filter
// there if force.
func pushFilter(ctx context.Context, client *redis.Client, stderr io.Writer, f *bloom.Filter, dst filterURL, force bool) error {
	where := dst.where(dst.name)
	prog := startTransfer(stderr, "push", f.Bytes(), redisUploaded(ctx, client, dst.name), true)
	defer prog.stop()
	_, err := redisfilter.CreateFrom(ctx, client, dst.name, f)
	if errors.Is(err, redisfilter.ErrExists) {
		if !force {
			return fmt.Errorf("%s exists (push --force replaces it)", where)
		}
		err = replaceFilter(ctx, client, f, dst.name)
	}
	if err != nil {
		return fmt.Errorf("push to %s: %w", where, err)
	}
	prog.done()
	return nil
}

// replaceFilter replaces the filter called name with f: atomically if it
// has f's geometry, else by deleting it first. Keys that hold something
// else than a filter are left alone.
func replaceFilter(ctx context.Context, client *redis.Client, f *bloom.Filter, name string) error {
	old, err := redisfilter.Open(ctx, client, name)
	if err == nil {
		if s := old.Sizing(); s.Layout == f.Layout() && s.Bits == f.Bits() && s.K == f.K() {
			return old.RotateFrom(ctx, f)
		}
		err = old.Delete(ctx)
	} else if errors.Is(err, redisfilter.ErrMetadata) {
		var s *redisfilter.Scalable
		if s, err = redisfilter.OpenScalable(ctx, client, name); err == nil {
			err = s.Delete(ctx)
		} else {
			err = fmt.Errorf("the key holds something that is not a filter; not replaced: %w", err)
		}
	}
	if err != nil {
		return err
	}
	_, err = redisfilter.CreateFrom(ctx, client, name, f)
	return err
}

// redisUploaded returns how many bytes of the filter called name are in
// Redis so far: the lengths of the shard keys its metadata names (Upload
// writes them in order). It knows nothing before the metadata exists.
func redisUploaded(ctx context.Context, client *redis.Client, name string) func() uint64 {
	var shards []string
	return func() uint64 {
		if shards == nil {
			f, err := redisfilter.Open(ctx, client, name)
			if err != nil {
				return 0
			}
			shards = f.Meta().Shards
		}
		pipe := client.Pipeline()
		lens := make([]*redis.IntCmd, len(shards))
		for i, k := range shards {
			lens[i] = pipe.StrLen(ctx, k)
		}
		pipe.Exec(ctx)
		var n uint64
		for _, l := range lens {
			n += uint64(max(l.Val(), 0))
		}
		return n
	}
}

// pushScalable loads s into a bloomery server with BF.LOADCHUNK, chunk by
// chunk as bloom.Scalable.DumpChunk numbers them (BF.SCANDUMP's
// arithmetic): the header at iterator 1, then the payload.
func pushScalable(ctx context.Context, client *redis.Client, stderr io.Writer, s *bloom.Scalable, dst filterURL, force bool) error {
	where := dst.where(dst.name)
	n, err := client.Exists(ctx, dst.name).Result()
	if err != nil {
		return fmt.Errorf("push to %s: %w", where, err)
	}
	if n > 0 && !force {
		return fmt.Errorf("%s exists (push --force replaces it)", where)
	}
	if n > 0 {
		if err := client.Del(ctx, dst.name).Err(); err != nil {
			return fmt.Errorf("push to %s: %w", where, err)
		}
	}
	prog := startTransfer(stderr, "push", uint64(s.PayloadSize()), nil, true)
	defer prog.stop()
	if err := loadChunks(ctx, client, s, dst.name, prog); err != nil {
		// Leave no half-loaded filter behind.
		client.Del(context.WithoutCancel(ctx), dst.name)
		return fmt.Errorf("push to %s: %w", where, err)
	}
	prog.done()
	return nil
}

// loadChunks sends s to the key name in BF.LOADCHUNK commands.
func loadChunks(ctx context.Context, client *redis.Client, s *bloom.Scalable, name string, prog *transfer) error {
	for it := int64(0); ; {
		next, chunk, err := s.DumpChunk(it)
		if err != nil {
			return fmt.Errorf("reading the filter: %w", err)
		}
		if next == 0 {
			return nil
		}
		if err := client.BFLoadChunk(ctx, name, next, chunk).Err(); err != nil {
			return fmt.Errorf("BF.LOADCHUNK at %d: %w", next, err)
		}
		if it > 0 {
			prog.set(uint64(next - 1))
		}
		it = next
	}
}
