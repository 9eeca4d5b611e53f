// Command bloomery sizes, builds and inspects Bloom filters made with the
// github.com/bloomery/bloom package.
//
// Usage:
//
//	bloomery <command> [flags]
//
// Commands:
//
//	build   build a filter file from lines (or NUL-separated items) of
//	        files or standard input
//	calc    print the size, hash count and expected false-positive rates
//	        of a filter for n items at rate p, for each layout; --plot
//	        draws the rate as the filter fills
//	check   print the items that may be in a filter file, like grep
//	        (exit status 0 if any, 1 if none, 2 on error)
//	dedup   print each line the first time it is seen, optionally
//	        remembering the lines between runs
//	fpr     measure a filter's false-positive rate: insert N items, probe
//	        M never-inserted ones (in memory, on Redis or on a server)
//	info    describe a filter file: parameters, fill, estimated items
//	        and false-positive rate
//	pull    save a filter from Redis or a bloomery server to a file
//	push    copy a filter file into Redis or a bloomery server
//	serve   run the RedisBloom-compatible server (BF.* over the Redis
//	        protocol), durable on local disk or in front of Redis
//
// Run "bloomery <command> --help" for a command's flags and examples.
//
// Exit status is 0 on success, 1 when a command fails, and 2 for usage
// errors: an unknown command or flag, or a flag value out of range; check
// has grep's statuses instead. Errors go to standard error; reports go to
// standard output.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes returned by run.
const (
	exitOK    = 0 // success
	exitError = 1 // the command failed
	exitUsage = 2 // bad command line: unknown command or flag, bad flag value
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args (without the program name) and
// returns the process exit code. It never calls os.Exit, so tests can run
// it in-process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)

	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	var st *exitStatus
	if errors.As(err, &st) {
		if st.err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), st.err)
		}
		return st.code
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

// newRootCmd builds the command tree. Each subcommand lives in its own file
// and is added here.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bloomery",
		Short: "Size, build and inspect Bloom filters",
		Long: `bloomery sizes, builds and inspects Bloom filters made with the
github.com/bloomery/bloom package.

Exit status: 0 on success, 1 when a command fails, 2 for usage errors.`,
		Example: `  # Size a filter for one million items at a 1% false-positive rate:
  bloomery calc -n 1e6 -p 0.01`,
		// Taking arguments here (instead of cobra's default) lets an
		// unknown command come back as a usage error.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
			}
			return usageErrorf("%s", msg)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		SilenceErrors:              true, // run prints errors
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &usageError{err}
	})
	root.AddCommand(
		newCalcCmd(),
		newServeCmd(),
		newBuildCmd(),
		newCheckCmd(),
		newInfoCmd(),
		newDedupCmd(),
		newFprCmd(),
		newPushCmd(),
		newPullCmd(),
		newMigrateCmd(),
	)
	return root
}

// usageError marks an error in the command line itself; run exits with
// exitUsage for it.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitStatus makes run exit with code, after printing err unless it is
// nil: check's grep-like statuses, 1 (silently) when nothing matched and
// 2 when it fails.
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitStatus) Unwrap() error { return e.err }

// noArgs is cobra.NoArgs returning a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q (%s takes only flags)", args[0], cmd.CommandPath())
	}
	return nil
}
