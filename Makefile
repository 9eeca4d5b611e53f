# Bloomery's developer entry points. `make test` is what CI runs.
GO ?= go

.PHONY: test deps check race accuracy fuzz-short bench-module interop-module examples-module fuzz fpr-long bench bench-rate redis

# Everything CI checks: formatting, vet, race-enabled tests, the
# statistical accuracy tests (race-free: they are CPU-bound), a short fuzz
# run of every decoder, and the tests of the bench, interop and examples
# modules.
test: deps check bench-module interop-module examples-module race accuracy fuzz-short

check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

race:
	$(GO) test -race -count=1 ./...

# The tests that skip under the race detector (statistical accuracy:
# TestFPR…; allocation counts, long runs and redisfilter's long
# one-goroutine comparisons with the in-memory filters: TestNoRace…; the
# vector Test's, which race-detector builds leave out: TestVecProbe…) run
# here, without it; TestRaceSkipsRunSomewhere keeps that naming true.
accuracy:
	$(GO) test -count=1 -run '^(TestFPR|TestNoRace|TestVecProbe)' . ./guard ./cuckoo ./server ./redisfilter

FUZZ_TARGETS = FuzzUnmarshal FuzzUnmarshalScalable FuzzLoadScalableHeader FuzzUnmarshalCounting FuzzOpenFile FuzzLoadAny FuzzLoadChunk FuzzLoadRedisBloomHeader

# Every fuzz target, with execution-count budgets (see the script).
fuzz-short:
	GO=$(GO) scripts/fuzz-short

bench-module:
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...

# Compatibility with other libraries' data (go-zero's Redis filter), in a
# module of its own so they never enter the main module's go.mod.
interop-module:
	cd interop && $(GO) vet ./... && $(GO) test -count=1 ./...

# The runnable examples (examples/guard: an HTTP service over SQLite), in
# a module of their own so that the SQLite driver never enters the main
# module's go.mod; their tests run under the race detector.
examples-module:
	cd examples && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# Installs what the tests need if missing (scripts/install-deps says
# what: redis-server and redis-cli, strace, python3-redis, Node.js and
# node-redis); quick when everything is there.
deps redis:
	scripts/install-deps

# Longer runs, not in CI.
fuzz:
	for t in $(FUZZ_TARGETS); do $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime 5m . || exit 1; done

fpr-long:
	BLOOMERY_FPR_LONG=1 $(GO) test -count=1 -timeout 4h -run 'TestFPRLong' -v .

bench:
	cd bench && $(GO) run ./cmd/compare -n 1e6,1e7,1e8 -p 0.01,0.001 -reps 5

bench-rate:
	cd bench && $(GO) run ./cmd/compare -rateonly
