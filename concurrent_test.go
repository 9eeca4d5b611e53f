package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// concKey is key i of the concurrency tests: "c" and i in decimal.
func concKey(buf []byte, i uint64) []byte {
	return strconv.AppendUint(append(buf[:0], 'c'), i, 10)
}

// TestConcurrentAddTest runs 8 writers, each adding its own disjoint range
// of keys through Add, AddString and AddMany, and 4 readers that check,
// while the writers run, that every key a writer has published as added
// answers present. Afterwards every key must be present and the counts
// must match the model.
func TestConcurrentAddTest(t *testing.T) {
	const writers, readers = 8, 4
	perWriter := uint64(50_000)
	if raceEnabled {
		perWriter = 20_000 // the race detector makes each operation ~30x slower
	}
	total := writers * perWriter
	for _, v := range []optVariant{
		{"blocked", Blocked, false, true},
		{"classic", Classic, false, true},
		{"blocked/keyed", Blocked, true, true},
		{"redisbloom", RedisBloom, false, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, total, 0.01, v.opts()...)
			var (
				progress [writers]atomic.Uint64 // keys [w*perWriter, w*perWriter+progress[w]) are in
				news     atomic.Uint64
				done     atomic.Bool
				wg, rwg  sync.WaitGroup
				errs     = make(chan string, writers+readers)
			)
			for w := range uint64(writers) {
				wg.Go(func() {
					base := w * perWriter
					var buf [24]byte
					batch := make([][]byte, 0, 100)
					var n uint64
					for i := uint64(0); i < perWriter; {
						switch (i / 100) % 3 {
						case 0: // 100 single Adds
							for j := range uint64(100) {
								if f.Add(concKey(buf[:], base+i+j)) {
									n++
								}
								progress[w].Store(i + j + 1)
							}
						case 1: // 100 AddStrings
							for j := range uint64(100) {
								if f.AddString(string(concKey(buf[:], base+i+j))) {
									n++
								}
								progress[w].Store(i + j + 1)
							}
						case 2: // one AddMany of 100
							batch = batch[:0]
							for j := range uint64(100) {
								batch = append(batch, concKey(nil, base+i+j))
							}
							n += uint64(f.AddMany(batch))
							progress[w].Store(i + 100)
						}
						i += 100
					}
					news.Add(n)
				})
			}
			for r := range uint64(readers) {
				rwg.Go(func() {
					var buf [24]byte
					items := make([][]byte, 0, 64)
					var dst []bool
					for round := uint64(0); !done.Load(); round++ {
						w := (r + round) % writers
						hi := progress[w].Load()
						if hi == 0 {
							continue
						}
						base := w * perWriter
						// A few single tests spread over what is in, and a
						// batch of the most recent keys.
						for j := range uint64(8) {
							i := base + (round*7919+j*104729)%hi
							if !f.Test(concKey(buf[:], i)) || !f.TestString(string(concKey(buf[:], i))) {
								errs <- fmt.Sprintf("reader %d: published key %d absent while writers run", r, i)
								return
							}
						}
						items = items[:0]
						for i := hi - min(hi, 64); i < hi; i++ {
							items = append(items, concKey(nil, base+i))
						}
						dst = f.TestMany(items, dst)
						for j, ok := range dst {
							if !ok {
								errs <- fmt.Sprintf("reader %d: TestMany: published key %q absent while writers run", r, items[j])
								return
							}
						}
						// Keys of an unused range: exercise the miss path.
						f.Test(concKey(buf[:], total+round))
					}
				})
			}
			wg.Wait()
			done.Store(true)
			rwg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}

			var buf [24]byte
			for i := range total {
				if !f.Test(concKey(buf[:], i)) {
					t.Fatalf("false negative after concurrent adds: key %d", i)
				}
			}
			ins := news.Load()
			if got := f.Inserted(); got != ins {
				t.Errorf("Inserted() = %d, the Add calls reported %d new", got, ins)
			}
			if ins > total {
				t.Errorf("%d adds reported new for %d distinct keys", ins, total)
			}
			// An add reports not new when all its bits were already set: a
			// false positive at that moment. Expected number: the sum of the
			// model's rate over the fill.
			s := f.Sizing()
			const steps = 200
			lost := 0.0
			for j := range steps {
				lost += s.FPRAt(uint64((float64(j)+0.5)*float64(total)/steps)) * float64(total) / steps
			}
			if d := math.Abs(float64(total-ins) - lost); d > 5*math.Sqrt(lost)+5 {
				t.Errorf("%d of %d adds reported not new; the model expects %.0f", total-ins, total, lost)
			}
			if c := f.Count(); math.Abs(float64(c)/float64(total)-1) > 0.03 {
				t.Errorf("Count() = %d for %d distinct keys", c, total)
			}
			t.Logf("%d keys: Inserted %d (model expects %.0f not new), Count %d", total, ins, lost, f.Count())
		})
	}
}

// TestConcurrentSameKeys has writers race to add the same keys: every key
// is present afterwards, and every key was reported new at least once.
func TestConcurrentSameKeys(t *testing.T) {
	const writers, n = 4, 5000
	for _, layout := range []Layout{Blocked, Classic, RedisBloom} {
		t.Run(layout.String(), func(t *testing.T) {
			f := newFilterT(t, n, 1e-6, WithLayout(layout), WithConcurrent())
			var newCount [n]atomic.Int32
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					var buf [8]byte
					for j := range uint64(n) {
						i := (j + uint64(w)*n/writers) % n // different starting points
						binary.LittleEndian.PutUint64(buf[:], i)
						if f.Add(buf[:]) {
							newCount[i].Add(1)
						}
					}
				})
			}
			wg.Wait()
			var buf [8]byte
			sum := uint64(0)
			for i := range uint64(n) {
				binary.LittleEndian.PutUint64(buf[:], i)
				if !f.Test(buf[:]) {
					t.Fatalf("false negative for key %d", i)
				}
				c := newCount[i].Load()
				if c < 1 || c > writers {
					t.Fatalf("key %d reported new %d times by %d writers", i, c, writers)
				}
				sum += uint64(c)
			}
			if f.Inserted() != sum {
				t.Errorf("Inserted() = %d, Add reported new %d times", f.Inserted(), sum)
			}
			// Two goroutines adding the same new item at once may both
			// report it new, so Inserted may exceed the distinct count here.
			t.Logf("%d distinct keys added by %d racing writers: Inserted %d", n, writers, sum)
		})
	}
}

// TestConcurrentReaders uses a default (exclusive-mode) filter from many
// goroutines at once through the read-only methods only, which its
// documentation allows: every answer must equal the one given serially.
func TestConcurrentReaders(t *testing.T) {
	const n, goroutines = 20_000, 12
	for _, v := range []optVariant{{"blocked", Blocked, false, false}, {"classic", Classic, false, false}, {"blocked/keyed", Blocked, true, false}} {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, n, 0.01, v.opts()...)
			items := genItems("reader", 2*n)
			f.AddMany(items[:n])
			want := f.TestMany(items, nil) // first n true, then ~1% false positives
			var wantEnc bytes.Buffer
			if _, err := f.WriteTo(&wantEnc); err != nil {
				t.Fatal(err)
			}
			count, fill, est, ins := f.Count(), f.FillRatio(), f.EstimatedFPR(), f.Inserted()

			var wg sync.WaitGroup
			errs := make(chan string, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					fail := func(format string, args ...any) {
						errs <- fmt.Sprintf("goroutine %d: ", g) + fmt.Sprintf(format, args...)
					}
					var dst []bool
					for off := g * 97; off < len(items); off += 613 {
						end := min(off+100, len(items))
						dst = f.TestMany(items[off:end], dst)
						for j, got := range dst {
							i := off + j
							if got != want[i] {
								fail("TestMany item %d = %v, serially %v", i, got, want[i])
								return
							}
							if f.Test(items[i]) != want[i] || f.TestString(string(items[i])) != want[i] || f.TestHash(f.Hash(items[i])) != want[i] {
								fail("Test item %d != %v", i, want[i])
								return
							}
						}
					}
					switch g % 4 {
					case 0:
						if f.Count() != count {
							fail("Count changed")
						}
					case 1:
						if f.FillRatio() != fill || f.EstimatedFPR() != est {
							fail("FillRatio or EstimatedFPR changed")
						}
					case 2:
						var b bytes.Buffer
						if _, err := f.WriteTo(&b); err != nil || !bytes.Equal(b.Bytes(), wantEnc.Bytes()) {
							fail("WriteTo: %v, or a different encoding", err)
						}
					case 3:
						if f.Offsets(f.Hash(items[0]), nil) == nil || f.Inserted() != ins {
							fail("Offsets or Inserted")
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}
