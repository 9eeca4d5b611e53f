package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/atomicfile"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// newPullCmd is "bloomery pull": save a filter from Redis or a bloomery
// server to a file.
func newPullCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "pull redis://host:port/db/name | bloomery://host:port/name FILTER",
		Short: "Save a filter from Redis or a bloomery server to a file",
		Long: `pull saves the filter at a key to the file FILTER:

  redis://host:port/db/name    a redisfilter.Filter, as a fixed-size filter
                               file (kind 1) with the same bits
  bloomery://host:port/name    a filter on a running bloomery serve, read
                               with BF.SCANDUMP, as a scalable filter file
                               (kind 2)

The file is written to a temporary file beside FILTER, flushed to disk
and renamed over it at the end, so FILTER is never half-written, even
after a crash; an existing FILTER is kept
unless --force is given. Writes made to the filter while pull runs may or
may not be in the file. The insert count of a Redis filter is not kept in
Redis: the file records 0.

On a terminal, pull shows its progress on standard error. Keyed filters
(WithKey) cannot be pulled.`,
		Example: `  # Save a Redis filter and query the copy:
  bloomery pull redis://127.0.0.1:6379/0/urls urls.bloom
  bloomery check urls.bloom https://example.com/

  # A filter of a bloomery server:
  bloomery pull bloomery://127.0.0.1:6380/seen seen.bloom`,
		Args: exactArgs(2, "a source URL and FILTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := parseFilterURL("source", args[0], true)
			if err != nil {
				return err
			}
			if _, err := os.Stat(args[1]); err == nil && !force {
				return fmt.Errorf("%s exists (pull --force replaces it)", args[1])
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runPull(ctx, cmd.ErrOrStderr(), src, args[1])
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace FILTER if it exists")
	return cmd
}

// runPull saves the filter at src to path.
func runPull(ctx context.Context, stderr io.Writer, src filterURL, path string) error {
	client := src.client()
	defer client.Close()
	var (
		w   io.WriterTo
		err error
	)
	if src.server {
		w, err = pullScalable(ctx, client, stderr, src)
	} else {
		w, err = pullFilter(ctx, client, stderr, src)
	}
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, 0o666, w)
}

// pullFilter downloads the redisfilter src.name.
func pullFilter(ctx context.Context, client *redis.Client, stderr io.Writer, src filterURL) (*bloom.Filter, error) {
	where := src.where(src.name)
	rf, err := redisfilter.Open(ctx, client, src.name)
	switch {
	case errors.Is(err, redisfilter.ErrNotFound):
		return nil, fmt.Errorf("no filter at %s", where)
	case errors.Is(err, redisfilter.ErrKeyRequired):
		return nil, fmt.Errorf("the filter at %s is keyed (SipHash with a secret key): pull cannot read it without its key", where)
	case err != nil:
		return nil, fmt.Errorf("pull from %s: %w", where, err)
	}
	// Download cannot report how far it is: the line shows the time only.
	prog := startTransfer(stderr, "pull", rf.Sizing().Bytes(), nil, false)
	defer prog.stop()
	f, err := rf.Download(ctx)
	if err != nil {
		return nil, fmt.Errorf("pull from %s: %w", where, err)
	}
	prog.done()
	return f, nil
}

// pullScalable reads the filter src.name of a bloomery server with
// BF.SCANDUMP: the dump header at iterator 0, then payload chunks, each
// returned with the iterator of the next, loaded at that iterator
// (bloom.Scalable.LoadChunk), until the iterator is 0.
func pullScalable(ctx context.Context, client *redis.Client, stderr io.Writer, src filterURL) (*bloom.Scalable, error) {
	where := src.where(src.name)
	head, err := client.BFScanDump(ctx, src.name, 0).Result()
	if err != nil {
		if err.Error() == "ERR not found" {
			return nil, fmt.Errorf("no filter at %s", where)
		}
		return nil, fmt.Errorf("pull from %s: BF.SCANDUMP: %w", where, err)
	}
	s, err := bloom.LoadScalableHeader([]byte(head.Data))
	if err != nil {
		return nil, fmt.Errorf("pull from %s: the dump header: %w", where, err)
	}
	prog := startTransfer(stderr, "pull", uint64(s.PayloadSize()), nil, true)
	defer prog.stop()
	for it := head.Iter; it != 0; {
		chunk, err := client.BFScanDump(ctx, src.name, it).Result()
		if err != nil {
			return nil, fmt.Errorf("pull from %s: BF.SCANDUMP at %d: %w", where, it, err)
		}
		if chunk.Iter == 0 {
			break
		}
		if err := s.LoadChunk(chunk.Iter, []byte(chunk.Data)); err != nil || chunk.Iter != it+int64(len(chunk.Data)) {
			return nil, fmt.Errorf("pull from %s: BF.SCANDUMP at %d: a chunk of %d bytes that does not fit (%v); did the filter change?",
				where, it, len(chunk.Data), err)
		}
		it = chunk.Iter
		prog.set(uint64(it - 1))
	}
	prog.done()
	return s, nil
}
