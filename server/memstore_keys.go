package server

import "context"

// The memory backend's keyspace (keyStore).

func (m *memstore) CountExisting(_ context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		unlock := m.ks.lock(k)
		if m.ks.get(k) != nil {
			n++
		}
		unlock()
	}
	return n, nil
}

func (m *memstore) Delete(_ context.Context, keys []string) (int, error) {
	defer m.ks.lock(keys...)()
	var logged [][]byte
	for _, k := range keys {
		if m.ks.del(k) {
			logged = append(logged, []byte(k))
		}
	}
	if len(logged) > 0 {
		m.log(append([][]byte{[]byte("DEL")}, logged...)...)
	}
	return len(logged), nil
}

func (m *memstore) Type(_ context.Context, key string) (string, error) {
	defer m.ks.lockKey(key).Unlock()
	e := m.ks.get(key)
	if e == nil {
		return "none", nil
	}
	return e.typeOf(), nil
}

func (m *memstore) Rename(_ context.Context, from, to string) error {
	defer m.ks.lock(from, to)()
	if !m.ks.rename(from, to) {
		return errNoSuchKey
	}
	m.log([]byte("RENAME"), []byte(from), []byte(to))
	return nil
}

func (m *memstore) PExpireAt(_ context.Context, key string, at int64, cond expireCond) (bool, error) {
	defer m.ks.lockKey(key).Unlock()
	e := m.ks.get(key)
	if e == nil || !cond.allows(e.expireAt, at) {
		return false, nil
	}
	if at <= m.ks.now().UnixMilli() {
		m.ks.del(key)
		m.log([]byte("DEL"), []byte(key))
		return true, nil
	}
	m.ks.setExpire(key, e, at)
	m.log([]byte("PEXPIREAT"), []byte(key), fmtInt(at))
	return true, nil
}

// allows reports whether cond lets an expiry of old (0: none) become at.
func (cond expireCond) allows(old, at int64) bool {
	switch cond {
	case expireNX:
		return old == 0
	case expireXX:
		return old != 0
	case expireGT:
		return old != 0 && at > old
	case expireLT:
		return old == 0 || at < old
	}
	return true
}

func (m *memstore) PTTL(ctx context.Context, key string) (int64, error) {
	at, err := m.ExpireTime(ctx, key)
	if at < 0 || err != nil {
		return at, err
	}
	return max(at-m.ks.now().UnixMilli(), 0), nil
}

func (m *memstore) ExpireTime(_ context.Context, key string) (int64, error) {
	defer m.ks.lockKey(key).Unlock()
	e := m.ks.get(key)
	switch {
	case e == nil:
		return -2, nil
	case e.expireAt == 0:
		return -1, nil
	}
	return e.expireAt, nil
}

func (m *memstore) Persist(_ context.Context, key string) (bool, error) {
	defer m.ks.lockKey(key).Unlock()
	e := m.ks.get(key)
	if e == nil || e.expireAt == 0 {
		return false, nil
	}
	m.ks.setExpire(key, e, 0)
	m.log([]byte("PERSIST"), []byte(key))
	return true, nil
}

func (m *memstore) Scan(_ context.Context, cursor uint64, pattern string, count int) (uint64, []string, error) {
	keep := func(string) bool { return true }
	if pattern != "" {
		g := m.lastGlob.Load()
		if g == nil || g.src != pattern {
			g = compileGlob(pattern)
			m.lastGlob.Store(g)
		}
		keep = g.match
	}
	next, keys := m.ks.scan(cursor, count, keep)
	return next, keys, nil
}

func (m *memstore) DBSize(context.Context) (int64, error) { return int64(m.ks.len()), nil }

func (m *memstore) Flush(context.Context) error {
	unlock := m.ks.lockAll()
	old := m.ks.detach()
	m.log([]byte("FLUSHALL"))
	unlock()
	m.ks.release(old) // the keys' memory is counted down with no lock held
	return nil
}
