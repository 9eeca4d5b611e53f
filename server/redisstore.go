package server

import (
	"context"
	"errors"
)

// newRedisStore is written in the Redis backend step (issue 5).
func newRedisStore(ctx context.Context, cfg Config) (backend, error) {
	return nil, errors.New("server: redis backend not built yet")
}
