package controlplane

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/writhq/writ/protocol"
	"golang.org/x/time/rate"
)

// failLimiter counts, per source, requests that failed authentication. It
// never refuses a request: every request is verified first, and one that
// verifies is served whatever its address sent before, since behind a NAT or a
// load balancer many clients share one address. What it decides is how a
// failure is answered: with its own error while the source has failures to
// spend, and past that with 429, held for a while (failure.go's
// limitFailure), so that a guessing client gets few answers and little CPU.
type failLimiter struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	maxHeld int // answers held at once per source
	held    int // answers held at once, all sources
	sources map[string]*failSource
	max     int // sources tracked; past it the table is cleared
}

// failSource is one source's failure budget and its answers being held.
type failSource struct {
	lim  *rate.Limiter
	held int
}

func newFailLimiter(perSecond float64, burst, maxHeld, maxSources int) *failLimiter {
	return &failLimiter{limit: rate.Limit(perSecond), burst: burst, maxHeld: maxHeld, sources: map[string]*failSource{}, max: maxSources}
}

// source names the requester for rate limiting: its IPv4 address, or the /64
// of its IPv6 address, which one host can rotate through at will.
func source(r *http.Request) string {
	if fwd := r.Header.Get(headerForwardedFor); fwd != "" && fromServer(r) {
		return fwd // a write forwarded by a peer server: its original client
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (l *failLimiter) get(src string) *failSource {
	fs := l.sources[src]
	if fs == nil {
		if len(l.sources) >= l.max {
			// Forgetting everyone is safe: it only gives each source a fresh
			// budget, and bounds memory whatever the number of sources.
			// Answers being held keep their own entry and release it.
			l.sources = map[string]*failSource{}
		}
		fs = &failSource{lim: rate.NewLimiter(l.limit, l.burst)}
		l.sources[src] = fs
	}
	return fs
}

// failed spends one of src's failures. It reports whether src had one to
// spend; false means src is past its budget.
func (l *failLimiter) failed(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.get(src).lim.AllowN(time.Now(), 1)
}

// maxHeldTotal bounds the answers held at once over all sources, so that
// many failing sources together hold a bounded number of goroutines and
// connections.
const maxHeldTotal = 4096

// hold takes one of src's slots for a held answer; false when src has
// maxHeld answers held already, or all sources maxHeldTotal. release gives
// the slot back.
func (l *failLimiter) hold(src string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.get(src)
	if fs.held >= l.maxHeld || l.held >= maxHeldTotal {
		return nil, false
	}
	fs.held++
	l.held++
	return func() {
		l.mu.Lock()
		fs.held--
		l.held--
		l.mu.Unlock()
	}, true
}

func writeOverloaded(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(1))
	writeJSON(w, http.StatusTooManyRequests, protocol.ErrorResponse{Error: protocol.ErrorBody{Code: protocol.CodeOverloaded, Message: msg}})
}
