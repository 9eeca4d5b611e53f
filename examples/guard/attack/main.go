// Command attack sends requests for random IDs that do not exist to the
// example service (../), as a cache-penetration attack would, and prints
// what they cost the service's database.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

type stats struct {
	Guard struct {
		Requests, Absent, NegativeHits, Loads, FalsePositives uint64
	} `json:"guard"`
	DBQueries int64 `json:"db_queries"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "the service")
	n := flag.Int("n", 100_000, "requests")
	workers := flag.Int("c", 16, "concurrent requests")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers}, Timeout: 10 * time.Second}
	before, err := fetchStats(client, *url)
	if err != nil {
		log.Fatal(err)
	}
	var next, notFound, other atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range *workers {
		wg.Go(func() {
			for next.Add(1) <= int64(*n) {
				id := fmt.Sprintf("x%016x", rand.Uint64()) // no user has such an ID
				resp, err := client.Get(*url + "/users/" + id)
				if err != nil {
					log.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusNotFound {
					notFound.Add(1)
				} else {
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	after, err := fetchStats(client, *url)
	if err != nil {
		log.Fatal(err)
	}
	q := after.DBQueries - before.DBQueries
	fmt.Printf("%d requests for absent IDs in %v (%.0f/s): %d answered 404, %d otherwise\n",
		*n, elapsed.Round(time.Millisecond), float64(*n)/elapsed.Seconds(), notFound.Load(), other.Load())
	fmt.Printf("database queries: %d (%.4f per request)\n", q, float64(q)/float64(*n))
	fmt.Printf("answered by the filter: %d, by the negative cache: %d, false positives loaded: %d\n",
		after.Guard.Absent-before.Guard.Absent, after.Guard.NegativeHits-before.Guard.NegativeHits,
		after.Guard.FalsePositives-before.Guard.FalsePositives)
}

func fetchStats(c *http.Client, url string) (stats, error) {
	var s stats
	resp, err := c.Get(url + "/stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}
