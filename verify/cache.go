package verify

import (
	"sync"
	"time"
)

// CacheOptions configures a Cache. Zero values take the defaults.
type CacheOptions struct {
	// PositiveTTL is how long a verified digest stays verified without a
	// request. A digest is immutable and so is a signature over it; the TTL
	// only bounds how long a signature deleted from the registry (a
	// revocation by hand) still counts. Default: 24h.
	PositiveTTL time.Duration
	// NegativeTTL is how long "unsigned" or "invalid" is remembered. It is
	// short because CI often pushes an image and signs it a minute later: a
	// cycle in between must not hold the tag back for long. Default: 10m;
	// negative disables negative caching.
	NegativeTTL time.Duration
	// MaxEntries bounds the memory used: past it, expired entries go first,
	// then the entries that expire soonest. Default: 10000 (about 3 MB).
	MaxEntries int
}

// Cache remembers verdicts by repository, digest and policy identity (the
// hash of the keys, identity and trusted root a Verifier checks against), so
// that a cycle that finds nothing new makes no request for signatures.
// Errors that say nothing about the image (registry down, ctx cancelled) are
// never cached. A Cache is safe for concurrent use and may be shared by the
// Verifiers of every policy.
type Cache struct {
	positiveTTL, negativeTTL time.Duration
	maxEntries               int
	now                      func() time.Time

	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
}

type cacheKey struct{ repository, digest, policy string }

type cacheEntry struct {
	result  Result
	err     *Error // nil: verified
	expires time.Time
}

// NewCache returns an empty Cache.
func NewCache(opts CacheOptions) *Cache {
	c := &Cache{
		positiveTTL: opts.PositiveTTL,
		negativeTTL: opts.NegativeTTL,
		maxEntries:  opts.MaxEntries,
		now:         time.Now,
		entries:     make(map[cacheKey]cacheEntry),
	}
	if c.positiveTTL <= 0 {
		c.positiveTTL = 24 * time.Hour
	}
	if c.negativeTTL == 0 {
		c.negativeTTL = 10 * time.Minute
	}
	if c.maxEntries <= 0 {
		c.maxEntries = 10000
	}
	return c
}

// Len returns how many entries the cache holds, expired ones included.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *Cache) get(k cacheKey) (Result, *Error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return Result{}, nil, false
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, k)
		return Result{}, nil, false
	}
	return e.result, e.err, true
}

func (c *Cache) put(k cacheKey, r Result, verr *Error) {
	ttl := c.positiveTTL
	if verr != nil {
		ttl = c.negativeTTL
	}
	if ttl < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.maxEntries {
		c.evict(now)
	}
	c.entries[k] = cacheEntry{result: r, err: verr, expires: now.Add(ttl)}
}

// evict drops expired entries and, if that frees nothing, the entry that
// expires soonest. Linear, but it runs only once the cache is full.
func (c *Cache) evict(now time.Time) {
	var soonest cacheKey
	var soonestAt time.Time
	freed := false
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
			freed = true
			continue
		}
		if soonestAt.IsZero() || e.expires.Before(soonestAt) {
			soonest, soonestAt = k, e.expires
		}
	}
	if !freed && !soonestAt.IsZero() {
		delete(c.entries, soonest)
	}
}
