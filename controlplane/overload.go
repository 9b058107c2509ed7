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

// codeOverloaded answers a request the server will not queue: 429, with
// Retry-After, at once rather than after a wait.
const codeOverloaded protocol.Code = "overloaded"

// gate bounds the admissions and approvals in flight. A request that finds
// it full is turned away with 429 at once: a queue that grows without bound
// only turns overload into timeouts.
type gate chan struct{}

func (g gate) enter() bool {
	select {
	case g <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g gate) leave() { <-g }

// failLimiter rate-limits sources whose requests fail authentication, so that
// a guessing client costs little: once a source's budget of failures is spent,
// its requests are refused before any verification work.
type failLimiter struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	sources map[string]*rate.Limiter
	max     int // sources tracked; past it the table is cleared
}

func newFailLimiter(perSecond float64, burst, maxSources int) *failLimiter {
	return &failLimiter{limit: rate.Limit(perSecond), burst: burst, sources: map[string]*rate.Limiter{}, max: maxSources}
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

// blocked reports whether src has no failures left to spend right now.
func (l *failLimiter) blocked(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.sources[src]
	return lim != nil && lim.Tokens() < 1
}

// failed spends one of src's failures.
func (l *failLimiter) failed(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.sources[src]
	if lim == nil {
		if len(l.sources) >= l.max {
			// Forgetting everyone is safe: it only gives each source a fresh
			// budget, and bounds memory whatever the number of sources.
			l.sources = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.sources[src] = lim
	}
	lim.AllowN(time.Now(), 1)
}

func writeOverloaded(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(1))
	writeJSON(w, http.StatusTooManyRequests, protocol.ErrorResponse{Error: protocol.ErrorBody{Code: codeOverloaded, Message: msg}})
}
