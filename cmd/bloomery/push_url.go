package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The URLs of fpr, push and pull:
//
//	redis://[user:password@]host:port/db/name   a filter in Redis (redisfilter)
//	rediss://…                                  the same over TLS
//	bloomery://[user:password@]host:port/name   a filter on a bloomery server (BF.*)
//
// The name is everything after the database number (or the address), so
// it may contain slashes; escape other special characters as in any URL.

// defaultServerPort is the port of bloomery:// URLs without one (that of
// "bloomery serve").
const defaultServerPort = "6380"

// filterURL is a parsed filter URL.
type filterURL struct {
	text   string         // the server's URL without the name, for messages (password hidden)
	server bool           // bloomery://: BF.* commands; otherwise redisfilter
	opts   *redis.Options // how to connect
	name   string         // the key; "" if the URL names none
}

// parseFilterURL parses s. It returns a usage error naming arg (such as
// "--target" or "DEST") if s is not a filter URL, or if wantName and s
// names no key.
func parseFilterURL(arg, s string, wantName bool) (filterURL, error) {
	fu, err := parseFilterURLText(s)
	if err == nil && wantName && fu.name == "" {
		err = errors.New("no key name (want redis://host:port/db/name or bloomery://host:port/name)")
	}
	if err != nil {
		return filterURL{}, usageErrorf("invalid %s %q: %v", arg, redactURL(s), err)
	}
	return fu, nil
}

func parseFilterURLText(s string) (filterURL, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return filterURL{}, err
	}
	fu := filterURL{}
	if u.Host == "" || u.Opaque != "" {
		return fu, errors.New("no host (want e.g. redis://127.0.0.1:6379/0/name)")
	}
	path := strings.TrimPrefix(u.Path, "/")
	switch u.Scheme {
	case "redis", "rediss":
		db, name, _ := strings.Cut(path, "/")
		if db == "" {
			db = "0"
		}
		base := *u
		base.Path, base.RawPath = "/"+db, ""
		fu.opts, err = redis.ParseURL(base.String())
		if err != nil {
			return fu, err
		}
		fu.name, fu.text = name, base.Redacted()
	case "bloomery":
		if u.RawQuery != "" {
			return fu, errors.New("bloomery:// URLs take no query options")
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), defaultServerPort)
		}
		pass, _ := u.User.Password()
		fu.opts = &redis.Options{Addr: addr, Username: u.User.Username(), Password: pass}
		fu.server, fu.name = true, path
		base := *u
		base.Path, base.RawPath = "", ""
		fu.text = base.Redacted()
	default:
		return fu, fmt.Errorf("scheme %q: want redis://, rediss:// or bloomery://", u.Scheme)
	}
	// Neither Redis 7.0 nor bloomery speaks maintenance notifications;
	// without this go-redis asks on every connection.
	fu.opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return fu, nil
}

// redactURL hides the password of s, if it parses.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// where names the key on the URL's server, for messages.
func (fu filterURL) where(name string) string { return fmt.Sprintf("%s key %q", fu.text, name) }

// client connects to the URL's server.
func (fu filterURL) client() *redis.Client {
	quietRedis.Do(func() { redis.SetLogger(discardLogger{}) })
	return redis.NewClient(fu.opts)
}

// quietRedis silences go-redis's own log (dial retries and the like): the
// errors that matter come back to the command, which reports them once.
var quietRedis sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
