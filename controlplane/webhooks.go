package controlplane

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// The webhook events: an intent starts waiting for approval, and its wait
// ends (approved, denied, or expired unapproved).
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
)

// Webhook is a receiver of approval notifications. Each delivery is a POST of
// a JSON body carrying "text" (what Slack-style incoming webhooks display)
// and the event's intent, never its params; it is signed with Secret
// (Writ-Signature: t=UNIX,v1=hex(HMAC-SHA256(secret, "UNIX." + body))) and
// retried with backoff until MaxAttempts.
type Webhook struct {
	URL         string
	Events      []string // empty: every event
	Secret      []byte
	MaxAttempts int           // 0: 5
	RetryDelay  time.Duration // before the second attempt, doubling after; 0: 1s
}

func (h *Webhook) validate() error {
	u, err := url.Parse(h.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return fmt.Errorf("controlplane: webhook %q: give an https:// URL", h.URL)
	}
	if u.Scheme == "http" {
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("controlplane: webhook %q: plain http only to a loopback address; use https", h.URL)
		}
	}
	for _, e := range h.Events {
		if e != EventApprovalRequested && e != EventApprovalDecided {
			return fmt.Errorf("controlplane: webhook %q: unknown event %q (approval.requested, approval.decided)", h.URL, e)
		}
	}
	if len(h.Secret) < 16 {
		return fmt.Errorf("controlplane: webhook %q: the secret must be at least 16 bytes", h.URL)
	}
	if h.MaxAttempts < 0 || h.MaxAttempts > 20 {
		return fmt.Errorf("controlplane: webhook %q: max_attempts must be between 1 and 20", h.URL)
	}
	if h.RetryDelay < 0 || h.RetryDelay > time.Minute {
		return fmt.Errorf("controlplane: webhook %q: retry_delay must be between 0 and 1m", h.URL)
	}
	return nil
}

func (h *Webhook) retryDelay() time.Duration {
	if h.RetryDelay == 0 {
		return time.Second
	}
	return h.RetryDelay
}

func (h *Webhook) wants(event string) bool {
	return len(h.Events) == 0 || slices.Contains(h.Events, event)
}

const (
	webhookPending    = 4096 // changed intents waiting to be looked at
	webhookJobs       = 256  // deliveries waiting for a hook's worker
	webhookLog        = 200  // deliveries kept in the log
	webhookRemembered = 8192 // deliveries remembered, so that an event is sent once
	webhookTimeout    = 5 * time.Second
	// webhookReplay: an intent last changed this long before this server
	// began to lead is not announced by it (a replay after a restart, or a
	// change another leader announced).
	webhookReplay = 2 * time.Second
)

// webhooks delivers approval events from the leader. The FSM's observer
// hands it the ids of changed intents without blocking (a bounded set: an id
// changed twice is looked at once); one goroutine reads each intent and, while
// this server leads, queues what changed to each hook's worker. An event is
// sent by the leader that applied it, once per delivery id; a change applied
// before this server began to lead is not sent by it.
type webhooks struct {
	s      *Server
	hooks  []Webhook
	jobs   []chan webhookJob // one queue and worker per hook
	client *http.Client
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	pending map[string]bool
	leading bool
	since   time.Time       // when this server began to lead
	sent    map[string]bool // delivery ids sent or being sent
	order   []string
	log     []protocol.WebhookDelivery
	dropped int
}

type webhookJob struct {
	delivery, event, intent string
	body                    []byte
}

func newWebhooks(s *Server, hooks []Webhook) *webhooks {
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhooks{s: s, hooks: hooks, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
		pending: map[string]bool{}, sent: map[string]bool{},
		// A receiver's redirect is an answer, not a place to send the
		// signed body to.
		client: &http.Client{Timeout: webhookTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	for i := range hooks {
		ch := make(chan webhookJob, webhookJobs)
		w.jobs = append(w.jobs, ch)
		go w.worker(&w.hooks[i], ch)
	}
	return w
}

// changed is the FSM observer's part: it must return at once.
func (w *webhooks) changed(keys []string) {
	leader := w.s.isLeader()
	w.mu.Lock()
	switch {
	case !leader:
		w.leading = false
	case !w.leading:
		w.leading, w.since = true, time.Now()
	}
	if leader {
		for _, k := range keys {
			switch {
			case strings.HasPrefix(k, "\x00") || w.pending[k]:
			case len(w.pending) >= webhookPending:
				w.dropped++
			default:
				w.pending[k] = true
			}
		}
	}
	w.mu.Unlock()
	if leader {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *webhooks) run() {
	for {
		select {
		case <-w.s.stop:
			w.cancel()
			return
		case <-w.wake:
		}
		w.mu.Lock()
		ids, since := w.pending, w.since
		w.pending = map[string]bool{}
		w.mu.Unlock()
		for id := range ids {
			in, ok := w.s.reads.Intent(id)
			if !ok || !in.Decision.ApprovalRequired || in.UpdatedAt.Before(since.Add(-webhookReplay)) {
				continue
			}
			event := EventApprovalDecided
			if in.State == fsm.StatePendingApproval {
				event = EventApprovalRequested
			} else if in.Approval == nil && !fsm.Final(in.State) {
				continue
			}
			w.send(&in, event)
		}
	}
}

// send queues the event to every hook that wants it, once per delivery id.
func (w *webhooks) send(in *fsm.Intent, event string) {
	sum := sha256.Sum256([]byte(event + "\x00" + in.ID))
	delivery := hex.EncodeToString(sum[:12])
	w.mu.Lock()
	if w.sent[delivery] {
		w.mu.Unlock()
		return
	}
	w.sent[delivery] = true
	w.order = append(w.order, delivery)
	if len(w.order) > webhookRemembered {
		delete(w.sent, w.order[0])
		w.order = w.order[1:]
	}
	w.mu.Unlock()
	p := protocol.WebhookPayload{Event: event, Delivery: delivery, Approval: in.Approval, SentAt: w.s.now(),
		Intent: protocol.WebhookIntent{ID: in.ID, Tenant: in.Tenant, Principal: in.Principal, RunID: in.RunID, Tool: in.Tool,
			State: in.State, Policies: in.Decision.Policies, ExpiresAt: in.ExpiresAt}}
	if p.Intent.Policies == nil {
		p.Intent.Policies = []string{}
	}
	p.Text = WebhookText(&p)
	body, _ := jsonx.Marshal(p)
	for i := range w.hooks {
		if !w.hooks[i].wants(event) {
			continue
		}
		select {
		case w.jobs[i] <- webhookJob{delivery, event, in.ID, body}:
		default:
			w.record(protocol.WebhookDelivery{Delivery: delivery, Event: event, IntentID: in.ID, URL: redactURL(w.hooks[i].URL),
				Error: "the hook's queue is full", At: w.s.now()})
			w.mu.Lock()
			w.dropped++
			w.mu.Unlock()
		}
	}
}

// WebhookText is the line a chat shows of a delivery. Names chosen by orchestrators
// (principal, tool, approver) are escaped as Slack's markup asks, so that
// none can become a link or a mention in front of the approvers.
func WebhookText(p *protocol.WebhookPayload) string {
	in := p.Intent
	e := slackEscape
	switch {
	case p.Event == EventApprovalRequested:
		return fmt.Sprintf("Writ: %s (tenant %s) asks to run %s; intent %s awaits approval until %s.",
			e(in.Principal), e(in.Tenant), e(in.Tool), e(in.ID), in.ExpiresAt.UTC().Format(time.RFC3339))
	case p.Approval != nil:
		return fmt.Sprintf("Writ: intent %s (%s, tenant %s, tool %s) was decided by %s; it is %s.",
			e(in.ID), e(in.Principal), e(in.Tenant), e(in.Tool), e(p.Approval.Approver), in.State)
	}
	return fmt.Sprintf("Writ: intent %s (%s, tenant %s, tool %s) ended %s without an approval.", e(in.ID), e(in.Principal), e(in.Tenant), e(in.Tool), in.State)
}

func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// redactURL is a hook's URL as logs and the admin's view show it: scheme and
// host, never the path, which for incoming webhooks is the secret.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a webhook URL)"
	}
	out := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		out += "/…"
	}
	return out
}

func (w *webhooks) worker(h *Webhook, jobs chan webhookJob) {
	for {
		select {
		case <-w.ctx.Done():
			return
		case j := <-jobs:
			w.deliver(h, j)
		}
	}
}

// deliver posts a job until the receiver answers 2xx or the attempts run out.
func (w *webhooks) deliver(h *Webhook, j webhookJob) {
	attempts := h.MaxAttempts
	if attempts == 0 {
		attempts = 5
	}
	d := protocol.WebhookDelivery{Delivery: j.delivery, Event: j.event, IntentID: j.intent, URL: redactURL(h.URL)}
	for a := 1; a <= attempts; a++ {
		d.Attempts = a
		d.Status, d.Error = 0, ""
		err := w.post(h, j, &d)
		if err == nil {
			d.OK = true
			break
		}
		d.Error = err.Error()
		if a == attempts {
			break
		}
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(h.retryDelay() << min(a-1, 6)):
		}
	}
	d.At = w.s.now()
	if d.OK {
		w.s.log.Info("webhook delivered", "event", j.event, "intent_id", j.intent, "url", d.URL, "attempts", d.Attempts)
	} else {
		w.s.log.Warn("webhook not delivered", "event", j.event, "intent_id", j.intent, "url", d.URL, "attempts", d.Attempts, "err", d.Error)
	}
	w.record(d)
}

func (w *webhooks) record(d protocol.WebhookDelivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = append(w.log, d)
	if len(w.log) > webhookLog {
		w.log = w.log[len(w.log)-webhookLog:]
	}
}

func (w *webhooks) post(h *Webhook, j webhookJob, d *protocol.WebhookDelivery) error {
	ctx, cancel := context.WithTimeout(w.ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(j.body))
	if err != nil {
		return errors.New("the request could not be made")
	}
	ts := strconv.FormatInt(w.s.now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Writ-Event", j.event)
	req.Header.Set("Writ-Delivery", j.delivery)
	req.Header.Set("Writ-Signature", "t="+ts+",v1="+WebhookSignature(h.Secret, ts, j.body))
	resp, err := w.client.Do(req)
	if err != nil {
		// The URL error names the URL, which may hold a secret: keep its
		// cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return errors.New("the request failed")
	}
	resp.Body.Close()
	d.Status = resp.StatusCode
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return nil
}

// WebhookSignature is hex(HMAC-SHA256(secret, ts + "." + body)): what the
// v1 member of Writ-Signature carries, and what a receiver recomputes (and
// compares in constant time) before it trusts a delivery.
func WebhookSignature(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks a delivery's Writ-Signature header against its body
// and secret, and that its time is within skew of now.
func VerifyWebhook(secret []byte, header string, body []byte, now time.Time, skew time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return errors.New("webhook: malformed Writ-Signature")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > skew || d < -skew {
		return errors.New("webhook: the signature's time is outside the allowed skew")
	}
	if !hmac.Equal([]byte(sig), []byte(WebhookSignature(secret, ts, body))) {
		return errors.New("webhook: bad signature")
	}
	return nil
}

// deliveries returns the delivery log, newest first, and how many events
// were dropped because the queue was full.
func (w *webhooks) deliveries() ([]protocol.WebhookDelivery, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.log)
	slices.Reverse(out)
	return out, w.dropped
}

// handleWebhooks lists the configured webhooks (their URLs redacted) and
// the latest deliveries.
func (ep adminAPI) handleWebhooks(http.ResponseWriter, *http.Request) (any, *apiError) {
	v := protocol.WebhooksView{Webhooks: []protocol.WebhookView{}, Deliveries: []protocol.WebhookDelivery{}}
	for _, h := range ep.srv.cfg.Webhooks {
		ev := h.Events
		if len(ev) == 0 {
			ev = []string{EventApprovalRequested, EventApprovalDecided}
		}
		n := h.MaxAttempts
		if n == 0 {
			n = 5
		}
		v.Webhooks = append(v.Webhooks, protocol.WebhookView{URL: redactURL(h.URL), Events: ev, MaxAttempts: n})
	}
	if ep.srv.hooks != nil {
		v.Deliveries, v.Dropped = ep.srv.hooks.deliveries()
	}
	return v, nil
}
