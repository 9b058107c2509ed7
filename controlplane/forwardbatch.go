package controlplane

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/writhq/writ/controlplane/internal/varint"
	"github.com/writhq/writ/protocol"
)

// Submissions that reach a follower go to the leader in batches: while a few
// batches are in flight, newly arrived submissions wait, and the next request
// carries all of them (as group commit does for Raft entries). A lone
// submission goes at once, alone. The leader handles each as the forwarded
// request it would otherwise have been — handleSubmit, with the original
// client's source — concurrently, so that they share its group commit, and
// answers them together: one TLS request between the servers for many
// submissions instead of one each.
const (
	// batchPath is the leader's endpoint, for server certificates only.
	batchPath = "/v1/internal/submit-batch"
	// batchMaxItems and batchMaxBytes bound one batch; the encoding refuses
	// more items than that.
	batchMaxItems = 256
	batchMaxBytes = 4 << 20
	// batchesInFlight is how many batches a follower has at the leader at
	// once; past it, submissions queue for the next.
	batchesInFlight = 4
	// batchTimeout bounds a batch's round trip, as a single forward's.
	batchTimeout = 30 * time.Second
	// batchMarker is a batch request's Writ-Forwarded-For: never a client's
	// address, which is what a forwarded client request carries there.
	batchMarker = "batch"
)

var (
	batchRequestMagic = []byte("WFB1")
	batchAnswerMagic  = []byte("WFA1")
	errBatchFormat    = errors.New("controlplane: malformed submission batch")
	errNoBatches      = errors.New("controlplane: the leader takes no submission batches")
)

// batchItem is one forwarded submission: the original client's source (for
// the leader's rate limit of authentication failures) and its body as
// received.
type batchItem struct {
	Source string
	Body   []byte
}

// batchAnswer is the leader's answer to one item: what it would have written
// to that submission forwarded alone.
type batchAnswer struct {
	Status     int
	RetryAfter int // seconds; 0 for none
	Body       []byte
}

// encodeBatch writes items as "WFB1", their count, then each source and body,
// every length an unsigned varint.
func encodeBatch(items []batchItem) []byte {
	n := len(batchRequestMagic) + binary.MaxVarintLen64
	for _, it := range items {
		n += 2*binary.MaxVarintLen64 + len(it.Source) + len(it.Body)
	}
	b := append(make([]byte, 0, n), batchRequestMagic...)
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		b = varint.AppendBytes(b, it.Source)
		b = varint.AppendBytes(b, it.Body)
	}
	return b
}

// decodeBatch reads what encodeBatch writes, strictly: the magic, at most
// batchMaxItems items, no byte missing or left over. Bodies alias b.
func decodeBatch(b []byte) ([]batchItem, error) {
	r, ok := bytes.CutPrefix(b, batchRequestMagic)
	if !ok {
		return nil, errBatchFormat
	}
	n, r, ok := readUvarint(r)
	if !ok || n == 0 || n > batchMaxItems {
		return nil, errBatchFormat
	}
	items := make([]batchItem, 0, n)
	for range n {
		var src, body []byte
		if src, r, ok = readBytes(r); !ok {
			return nil, errBatchFormat
		}
		if body, r, ok = readBytes(r); !ok {
			return nil, errBatchFormat
		}
		items = append(items, batchItem{Source: string(src), Body: body})
	}
	if len(r) != 0 {
		return nil, errBatchFormat
	}
	return items, nil
}

// encodeAnswers writes "WFA1", the count, then each status, Retry-After and
// body.
func encodeAnswers(as []batchAnswer) []byte {
	n := len(batchAnswerMagic) + binary.MaxVarintLen64
	for _, a := range as {
		n += 3*binary.MaxVarintLen64 + len(a.Body)
	}
	b := append(make([]byte, 0, n), batchAnswerMagic...)
	b = binary.AppendUvarint(b, uint64(len(as)))
	for _, a := range as {
		b = binary.AppendUvarint(b, uint64(a.Status))
		b = binary.AppendUvarint(b, uint64(a.RetryAfter))
		b = varint.AppendBytes(b, a.Body)
	}
	return b
}

// decodeAnswers reads what encodeAnswers writes: exactly want answers, each
// status an HTTP status.
func decodeAnswers(b []byte, want int) ([]batchAnswer, error) {
	r, ok := bytes.CutPrefix(b, batchAnswerMagic)
	if !ok {
		return nil, errBatchFormat
	}
	n, r, ok := readUvarint(r)
	if !ok || n != uint64(want) {
		return nil, errBatchFormat
	}
	as := make([]batchAnswer, 0, n)
	for range n {
		var status, retry uint64
		var body []byte
		if status, r, ok = readUvarint(r); !ok || status < 100 || status > 599 {
			return nil, errBatchFormat
		}
		if retry, r, ok = readUvarint(r); !ok || retry > 3600 {
			return nil, errBatchFormat
		}
		if body, r, ok = readBytes(r); !ok {
			return nil, errBatchFormat
		}
		as = append(as, batchAnswer{Status: int(status), RetryAfter: int(retry), Body: body})
	}
	if len(r) != 0 {
		return nil, errBatchFormat
	}
	return as, nil
}

// readUvarint reads a varint in its shortest form only, so that one batch
// has one encoding.
func readUvarint(b []byte) (uint64, []byte, bool) {
	v, n := varint.Uvarint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

func readBytes(b []byte) ([]byte, []byte, bool) {
	n, r, ok := readUvarint(b)
	if !ok || n > uint64(len(r)) {
		return nil, b, false
	}
	return r[:n:n], r[n:], true
}

// handleSubmitBatch is the leader's side: each item is handled as the
// forwarded submission it stands for, all of them at once.
func (ep internalAPI) handleSubmitBatch(w http.ResponseWriter, r *http.Request) {
	// From a server, marked as a batch: a client request a follower forwarded
	// names its client's address there instead.
	if !fromServer(r) || r.Header.Get(headerForwardedFor) != batchMarker {
		writeError(w, protocol.CodeUnauthorized, "only a server of this cluster may forward submissions")
		return
	}
	body, aerr := readBody(w, r, batchMaxBytes+ep.srv.forwardLimit()+batchMaxItems*64)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	items, err := decodeBatch(body)
	if err != nil {
		writeError(w, protocol.CodeMalformed, "not a submission batch")
		return
	}
	if !ep.srv.isLeader() {
		writeError(w, protocol.CodeNoLeader, "this server is not the leader; retry")
		return
	}
	answers := make([]batchAnswer, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "/v1/intents", bytes.NewReader(it.Body))
			if err != nil {
				answers[i] = batchAnswer{Status: http.StatusInternalServerError}
				return
			}
			// The item is the forwarded request it would have been: over
			// this peer's TLS, naming its original client.
			req.TLS, req.RemoteAddr = r.TLS, r.RemoteAddr
			req.Header.Set(headerForwardedFor, it.Source)
			answers[i] = recorded(func(w http.ResponseWriter) { intentsAPI(ep).handleSubmit(w, req) })
		})
	}
	wg.Wait()
	// The applied index once every item is answered: the follower waits for
	// its own FSM to reach it before it serves a ?wait= from it.
	w.Header().Set(headerIndex, strconv.FormatUint(ep.srv.reads.Index(), 10))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	w.Write(encodeAnswers(answers))
}

// recorded is what write writes, as the answer to one item of a batch.
func recorded(write func(http.ResponseWriter)) batchAnswer {
	rec := &recorder{header: http.Header{}}
	write(rec)
	a := batchAnswer{Status: rec.status, Body: rec.body.Bytes()}
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	if ra, err := strconv.Atoi(rec.header.Get("Retry-After")); err == nil && ra > 0 && ra <= 3600 {
		a.RetryAfter = ra
	}
	return a
}

// recorder is the response of one item of a batch.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rc *recorder) Header() http.Header { return rc.header }

func (rc *recorder) WriteHeader(code int) {
	if rc.status == 0 {
		rc.status = code
	}
}

func (rc *recorder) Write(b []byte) (int, error) {
	if rc.status == 0 {
		rc.status = http.StatusOK
	}
	return rc.body.Write(b)
}

// batcher is a follower's side: it collects submissions and sends them to the
// leader in batches. Batches in flight are counted per leader, so that
// batches hung on a leader that vanished do not hold up a new one; what
// waits is bounded (batchMaxPending, batchMaxPendingBytes: past them a
// submission is answered 429 at once), and a submission whose client went
// away before its batch left is dropped from the queue.
type batcher struct {
	s *Server
	// leader names the leader's API address; rt sends a batch there and
	// returns its answers. Nil: the Raft leader and roundTrip. Tests set them.
	leader func() (string, bool)
	rt     func(api string, batch []*pendingItem) roundTripResult
	// maxPending and maxBytes bound the queue; zero means the defaults.
	maxPending, maxBytes int

	mu       sync.Mutex
	pending  []*pendingItem
	live     int // pending items not cancelled
	bytes    int
	inFlight map[string]int       // batches at each leader API address
	noBatch  map[string]time.Time // leaders that answered 404, and when
}

// Bounds of a follower's queue of submissions waiting for a batch, and how
// long a leader that takes no batches is remembered as such.
const (
	batchMaxPending      = 4096
	batchMaxPendingBytes = 64 << 20
	noBatchMemory        = time.Minute
)

var errQueueFull = errors.New("controlplane: too many submissions wait to be forwarded")

type pendingItem struct {
	item      batchItem
	done      chan batchResult
	cancelled bool // its client went away before it was sent (batcher.mu)
}

// batchResult is an item's answer with the leader's applied index when it
// answered, or the error that kept the batch from being answered.
type batchResult struct {
	answer batchAnswer
	index  uint64
	err    error
}

// forward sends one submission in the next batch and waits for its answer.
// errNoBatches means the leader does not take batches (a server of an older
// version leads): the caller forwards the submission alone. errQueueFull
// means too much waits already: the caller answers 429.
func (b *batcher) forward(ctx context.Context, it batchItem) (batchAnswer, uint64, error) {
	if err := ctx.Err(); err != nil {
		return batchAnswer{}, 0, err
	}
	p := &pendingItem{item: it, done: make(chan batchResult, 1)}
	b.mu.Lock()
	if api, ok := b.leaderAPI(); ok && time.Since(b.noBatch[api]) < noBatchMemory {
		b.mu.Unlock()
		return batchAnswer{}, 0, errNoBatches
	}
	// What can leave now leaves first (a new leader has free slots), then
	// the bound applies to what is left.
	b.flushLocked()
	maxPending, maxBytes := cmp.Or(b.maxPending, batchMaxPending), cmp.Or(b.maxBytes, batchMaxPendingBytes)
	if b.live >= maxPending || (b.live > 0 && b.bytes+len(it.Body) > maxBytes) {
		b.mu.Unlock()
		return batchAnswer{}, 0, errQueueFull
	}
	b.pending = append(b.pending, p)
	b.live++
	b.bytes += len(it.Body)
	b.flushLocked()
	b.mu.Unlock()
	select {
	case res := <-p.done:
		return res.answer, res.index, res.err
	case <-ctx.Done():
		// Not sent yet: it never will be. Sent: the batch goes on, and its
		// answer for this item is dropped.
		b.mu.Lock()
		if !p.cancelled && slices.Contains(b.pending, p) {
			p.cancelled = true
			b.live--
			b.bytes -= len(p.item.Body)
		}
		b.mu.Unlock()
		return batchAnswer{}, 0, ctx.Err()
	}
}

func (b *batcher) leaderAPI() (string, bool) {
	if b.leader != nil {
		return b.leader()
	}
	_, id := b.s.node.Raft.LeaderWithID()
	m, ok := b.s.cluster.g.member(string(id))
	return m.API, id != "" && ok
}

// flushLocked sends what is pending while fewer than batchesInFlight
// batches are at the current leader. With no leader known, what waits is
// answered no_leader at once, as a single forward would be.
func (b *batcher) flushLocked() {
	if b.inFlight == nil {
		b.inFlight, b.noBatch = map[string]int{}, map[string]time.Time{}
	}
	for len(b.pending) > 0 {
		api, ok := b.leaderAPI()
		if !ok {
			waiting := b.take(len(b.pending), math.MaxInt)
			res := refuseAll(waiting, protocol.CodeNoLeader, "no leader is known yet; retry")
			for i, p := range waiting {
				p.done <- batchResult{answer: res.answers[i]}
			}
			continue
		}
		if b.inFlight[api] >= batchesInFlight {
			return
		}
		batch := b.take(batchMaxItems, batchMaxBytes)
		if len(batch) == 0 {
			return // only cancelled items were left
		}
		b.inFlight[api]++
		go b.send(api, batch)
	}
}

// take removes up to n items (and about size bytes, at least one item) from
// the front of the queue, dropping cancelled ones, into a slice of their
// own.
func (b *batcher) take(n, size int) []*pendingItem {
	var batch []*pendingItem
	got, i := 0, 0
	for ; i < len(b.pending) && len(batch) < n; i++ {
		p := b.pending[i]
		if p.cancelled {
			continue
		}
		if len(batch) > 0 && got+len(p.item.Body) > size {
			break
		}
		batch = append(batch, p)
		got += len(p.item.Body)
	}
	clear(b.pending[:i]) // sent items are not kept alive by the queue
	b.pending = b.pending[i:]
	if len(b.pending) == 0 {
		b.pending = nil
	}
	b.bytes -= got
	b.live -= len(batch)
	return batch
}

func (b *batcher) send(api string, batch []*pendingItem) {
	rt := b.rt
	if rt == nil {
		rt = b.roundTrip
	}
	res := rt(api, batch)
	for i, p := range batch {
		r := batchResult{index: res.index, err: res.err}
		if res.err == nil {
			r.answer = res.answers[i]
		}
		p.done <- r
	}
	if b.s != nil && b.s.metrics != nil {
		b.s.metrics.forwardBatch.Observe(float64(len(batch)))
	}
	b.mu.Lock()
	if b.inFlight[api]--; b.inFlight[api] <= 0 {
		delete(b.inFlight, api)
	}
	if errors.Is(res.err, errNoBatches) {
		b.noBatch[api] = time.Now()
	}
	b.flushLocked()
	b.mu.Unlock()
}

type roundTripResult struct {
	answers []batchAnswer
	index   uint64
	err     error
}

// roundTrip sends one batch to the leader's API at api. A refusal of the
// whole batch (the peer no longer leads, or is at capacity) becomes every
// item's answer, as it would have been each one's had they gone alone.
func (b *batcher) roundTrip(api string, batch []*pendingItem) roundTripResult {
	s := b.s
	items := make([]batchItem, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var trace sendTrace
	req, err := http.NewRequestWithContext(trace.context(ctx), http.MethodPost, "https://"+api+batchPath, bytes.NewReader(encodeBatch(items)))
	if err != nil {
		return refuseAll(batch, protocol.CodeInternal, "cannot forward")
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(headerForwardedFor, batchMarker) // handleSubmitBatch requires it
	resp, err := s.cluster.http.Do(req)
	if trace.shed(err) {
		s.metrics.refused.WithLabelValues(string(protocol.CodeOverloaded)).Add(float64(len(batch)))
		return answerAll(batch, recorded(func(w http.ResponseWriter) {
			writeOverloaded(w, "the leader is at capacity: it closed the connection before the submissions were sent; retry")
		}))
	}
	if err != nil {
		s.log.Warn("forwarding to the leader", "api", api, "err", err)
		return refuseAll(batch, protocol.CodeNoLeader, "the leader did not answer; the write may or may not have been applied; retry (intents are idempotent by their key)")
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, int64(len(batch))*(8<<20)))
	if err != nil {
		return refuseAll(batch, protocol.CodeNoLeader, "the leader's answer was cut off; the write may or may not have been applied")
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return roundTripResult{err: errNoBatches}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		// The batch as a whole was refused for now (the peer no longer
		// leads, or is at capacity); each item gets that answer.
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return answerAll(batch, batchAnswer{Status: resp.StatusCode, RetryAfter: max(min(ra, 3600), 0), Body: out})
	default:
		// Any other refusal of the whole batch is between the servers,
		// nothing the clients did: never an authentication failure of theirs.
		s.log.Warn("the leader refused a submission batch", "api", api, "status", resp.StatusCode)
		return refuseAll(batch, protocol.CodeInternal, "the leader refused the forwarded submission; it was not applied")
	}
	answers, err := decodeAnswers(out, len(batch))
	if err != nil {
		s.log.Warn("the leader's answer to a submission batch does not decode", "api", api, "err", err)
		return refuseAll(batch, protocol.CodeInternal, "the leader's answer does not decode; the write may or may not have been applied")
	}
	idx, err := strconv.ParseUint(resp.Header.Get(headerIndex), 10, 64)
	if err != nil || idx == 0 {
		s.log.Warn("the leader's answer to a submission batch has no applied index", "api", api)
		return refuseAll(batch, protocol.CodeInternal, "the leader's answer has no applied index; the write may or may not have been applied")
	}
	return roundTripResult{answers: answers, index: idx}
}

// refuseAll answers every item of a batch with one error.
func refuseAll(batch []*pendingItem, code protocol.Code, msg string) roundTripResult {
	return answerAll(batch, recorded(func(w http.ResponseWriter) { writeError(w, code, msg) }))
}

// answerAll gives every item of a batch the same answer.
func answerAll(batch []*pendingItem, a batchAnswer) roundTripResult {
	answers := make([]batchAnswer, len(batch))
	for i := range answers {
		answers[i] = a
	}
	return roundTripResult{answers: answers}
}
