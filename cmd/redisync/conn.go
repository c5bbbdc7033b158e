package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// defaultURL is used when neither --redis nor REDIS_URL is given.
const defaultURL = "redis://127.0.0.1:6379"

// connectTimeout bounds dialing and the first PING, so that an unreachable
// server is reported within seconds rather than retried forever.
const connectTimeout = 5 * time.Second

// connFlags are the connection flags every Redis-facing command shares.
type connFlags struct {
	url            string
	cluster        bool
	sentinelMaster string
	// tlsCA, tlsCert and tlsKey name PEM files: the authority to trust for
	// a rediss:// server (besides the system's), and a client certificate.
	tlsCA, tlsCert, tlsKey string
	// classicPubSub: on a cluster, classic Pub/Sub instead of sharded
	// (redisync.WithShardedPubSub(false)).
	classicPubSub bool
}

// register adds the connection flags to fs.
func (cf *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.url, "redis", "", "server `URL`: redis://[user:pass@]host:port[/db], rediss:// for TLS (default $REDIS_URL, else "+defaultURL+")")
	fs.BoolVar(&cf.cluster, "cluster", false, "the server is a Redis Cluster; the URL's hosts are seed nodes")
	fs.StringVar(&cf.sentinelMaster, "sentinel-master", "", "the URL's hosts are Sentinels monitoring the master `NAME`")
	fs.StringVar(&cf.tlsCA, "tls-ca", "", "with rediss://, also trust the certificate authority in `FILE` (PEM)")
	fs.StringVar(&cf.tlsCert, "tls-cert", "", "with rediss://, present the client certificate in `FILE` (PEM; needs --tls-key)")
	fs.StringVar(&cf.tlsKey, "tls-key", "", "the client certificate's private key `FILE` (PEM)")
	fs.BoolVar(&cf.classicPubSub, "classic-pubsub", false, "with --cluster: the locks publish with PUBLISH, not SPUBLISH (redisync's WithShardedPubSub(false), Redisson without sharded subscriptions)")
}

// libOptions returns the redisync options the flags ask for.
func (cf *connFlags) libOptions() []redisync.Option {
	if cf.classicPubSub {
		return []redisync.Option{redisync.WithShardedPubSub(false)}
	}
	return nil
}

// given reports whether a server was named, by flag or by REDIS_URL.
func (cf *connFlags) given() bool {
	return cf.url != "" || os.Getenv("REDIS_URL") != ""
}

// rawURL returns the URL to use: the flag, REDIS_URL, or the default.
func (cf *connFlags) rawURL() string {
	switch {
	case cf.url != "":
		return cf.url
	case os.Getenv("REDIS_URL") != "":
		return os.Getenv("REDIS_URL")
	}
	return defaultURL
}

// options turns the flags into rueidis options. A malformed URL is a usage
// error.
//
// Besides rueidis.ParseURL's own forms it accepts a comma-separated host list
// (redis://h1:26379,h2:26379/0), the usual way to name Sentinels or cluster
// seeds, and a bare host:port (or list of them) without the scheme. Without --cluster the client is forced to single-node mode: rueidis
// would otherwise probe CLUSTER SLOTS, which miniredis answers as if it were a
// one-node cluster.
func (cf *connFlags) options() (rueidis.ClientOption, error) {
	raw := cf.rawURL()
	opt, err := rueidis.ParseURL(expandHosts(withScheme(raw)))
	if err != nil {
		return opt, usagef("bad Redis URL %q: %v", redactURL(raw), err)
	}
	if opt.Sentinel.MasterSet == "" {
		opt.Sentinel.MasterSet = cf.sentinelMaster
	}
	if opt.Sentinel.MasterSet != "" && cf.cluster {
		return opt, usagef("--cluster and --sentinel-master exclude each other")
	}
	if err := cf.tls(&opt); err != nil {
		return opt, err
	}
	opt.ForceSingleClient = !cf.cluster && opt.Sentinel.MasterSet == ""
	opt.DisableCache = true // redisync does not use client-side caching
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = connectTimeout
	}
	if opt.ConnWriteTimeout == 0 {
		opt.ConnWriteTimeout = 3 * time.Second
	}
	return opt, nil
}

// tls applies the TLS flags to opt, which must then be a rediss:// server's.
func (cf *connFlags) tls(opt *rueidis.ClientOption) error {
	if cf.tlsCA == "" && cf.tlsCert == "" && cf.tlsKey == "" {
		return nil
	}
	if opt.TLSConfig == nil {
		return usagef("--tls-ca, --tls-cert and --tls-key need a rediss:// URL")
	}
	if (cf.tlsCert == "") != (cf.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if cf.tlsCA != "" {
		pem, err := os.ReadFile(cf.tlsCA)
		if err != nil {
			return fmt.Errorf("read --tls-ca: %w", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s holds no PEM certificate", cf.tlsCA)
		}
		opt.TLSConfig.RootCAs = roots
	}
	if cf.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(cf.tlsCert, cf.tlsKey)
		if err != nil {
			return fmt.Errorf("load --tls-cert and --tls-key: %w", err)
		}
		opt.TLSConfig.Certificates = []tls.Certificate{cert}
	}
	return nil
}

// connect opens a rueidis client and checks that the server answers. Its
// errors name the address, since "connection refused" alone does not say
// which server refused.
func (cf *connFlags) connect(ctx context.Context) (rueidis.Client, error) {
	opt, err := cf.options()
	if err != nil {
		return nil, err
	}
	return dial(ctx, opt)
}

// dial opens a client with opt and PINGs it.
func dial(ctx context.Context, opt rueidis.ClientOption) (rueidis.Client, error) {
	where := strings.Join(opt.InitAddress, ",")
	if opt.Sentinel.MasterSet != "" {
		where = fmt.Sprintf("master %q via sentinel %s", opt.Sentinel.MasterSet, where)
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to Redis at %s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := rc.Do(pctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", connectTimeout)
		}
		return nil, fmt.Errorf("cannot talk to Redis at %s: %w", where, err)
	}
	return rc, nil
}

// withScheme gives a bare address, "127.0.0.1:6379" or "h1:26379,h2:26379"
// (what people type), the redis:// scheme a URL needs.
func withScheme(raw string) string {
	if raw != "" && !strings.Contains(raw, "://") {
		return "redis://" + raw
	}
	return raw
}

// expandHosts rewrites "scheme://[userinfo@]h1,h2,h3/rest" to
// "scheme://[userinfo@]h1/rest?addr=h2&addr=h3", the form rueidis.ParseURL
// understands. Other URLs are returned as they are.
func expandHosts(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo, authority = authority[:at+1], authority[at+1:]
	}
	hosts := strings.Split(authority, ",")
	if len(hosts) < 2 {
		return raw
	}
	var extra []string
	for _, h := range hosts[1:] {
		if h = strings.TrimSpace(h); h != "" {
			extra = append(extra, "addr="+h)
		}
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	sep := "?"
	if hasQuery {
		sep = "?" + query + "&"
	}
	return scheme + "://" + userinfo + strings.TrimSpace(hosts[0]) + path + sep + strings.Join(extra, "&")
}

// redactURL hides a password in a URL that is about to be printed.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}
