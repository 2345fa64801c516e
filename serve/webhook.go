package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/secretfile"
)

// MaxWebhookBody bounds the body of a webhook request. Registry events
// are a few KiB; a larger body is refused (413) without being read past
// the limit.
const MaxWebhookBody = 1 << 20

// SignatureHeader carries the HMAC-SHA256 of a webhook body made with the
// webhook's secretFile, as "sha256=" and 64 hexadecimal digits: GitHub's
// scheme, which any sender that can sign can follow.
const SignatureHeader = "X-Hub-Signature-256"

// Results of a webhook request, the result label of
// imagebump_webhooks_total.
const (
	hookTriggered        = "triggered"          // a target of this process watches an image it names
	hookNotOwned         = "not_owned"          // only targets of other shards do
	hookIgnored          = "ignored"            // no policy watches the images
	hookSkipped          = "skipped"            // it named no push (a pull, a deletion, a scan)
	hookPing             = "ping"               // GitHub's test delivery
	hookUnauthorized     = "unauthorized"       // 401
	hookTooLarge         = "too_large"          // 413
	hookBadRequest       = "bad_request"        // 400
	hookMethodNotAllowed = "method_not_allowed" // 405
	hookNotFound         = "not_found"          // 404
	hookError            = "error"              // 500: the secret file cannot be read
	hookStopping         = "stopping"           // 503: serve is stopping
)

// maxListedImages caps the images a webhook's status and log record keep.
const maxListedImages = 10

// hookStats keeps what each configured webhook received, for the status.
// Only configured names are kept, so a scan of random paths cannot grow
// it.
type hookStats struct {
	mu sync.Mutex
	by map[string]*hookStat
}

type hookStat struct {
	accepted, refused int
	last              WebhookRequest
}

func (h *hookStats) record(name string, req WebhookRequest, refused bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]*hookStat{}
	}
	st := h.by[name]
	if st == nil {
		st = &hookStat{}
		h.by[name] = st
	}
	if refused {
		st.refused++
	} else {
		st.accepted++
	}
	st.last = req
}

// status returns the status of the webhooks of cfg.
func (h *hookStats) status(hooks []config.Webhook) []WebhookStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []WebhookStatus
	for _, hk := range hooks {
		ws := WebhookStatus{Name: hk.Name, Path: "/hook/" + hk.Name, Auth: authKind(hk)}
		if st := h.by[hk.Name]; st != nil {
			ws.Accepted, ws.Refused = st.accepted, st.refused
			last := st.last
			ws.Last = &last
		}
		out = append(out, ws)
	}
	return out
}

func authKind(h config.Webhook) string {
	switch {
	case h.SecretFile != "":
		return "hmac-sha256"
	case h.TokenInQuery:
		return "bearer-or-query"
	}
	return "bearer"
}

// webhook returns the webhook of the config in force called name.
func (s *Server) webhook(name string) (config.Webhook, bool) {
	for _, h := range s.Config().Webhooks {
		if h.Name == name {
			return h, true
		}
	}
	return config.Webhook{}, false
}

// hookResponse is the body of an accepted webhook request: what serve
// made of it, for the sender's delivery log.
type hookResponse struct {
	Kind      string   `json:"kind"`
	Result    string   `json:"result"`
	Triggered []string `json:"triggered,omitempty"`
	NotOwned  []string `json:"notOwned,omitempty"`
	Ignored   []string `json:"ignored,omitempty"`
	Skipped   int      `json:"skipped,omitempty"`
	Targets   []string `json:"targets,omitempty"`
}

// serveHook answers POST /hook/{name}. A request is refused before any
// work, with a log record that names the hook, the status and the reason
// (never a secret, never the query): a method other than POST (405), a
// webhook the config does not have (404), a body over MaxWebhookBody
// (413, read no further), a missing or wrong token or signature (401), a
// body that is no payload serve reads (400), or any request once the
// server is stopping (503, Retry-After). An accepted request (202)
// triggers, through Trigger and its debounce, the targets of this process
// that apply a policy on a repository it names; images that no policy
// watches, or that only targets of other shards watch, are counted and
// ignored.
func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	hook, known := s.webhook(name)
	label := ""
	if known {
		label = name
	}
	now := s.clock.Now()
	refuse := func(status int, result, why string) {
		s.metrics.webhooks.WithLabelValues(label, result).Inc()
		if known {
			s.hooks.record(name, WebhookRequest{Time: now, Status: status, Result: result, Error: why}, true)
		}
		level := s.log.Warn
		if status == http.StatusInternalServerError {
			level = s.log.Error
		}
		level("webhook refused", "hook", printable.Cut(name, 100), "status", status, "result", result,
			"reason", why, "remote", r.RemoteAddr, "content_length", r.ContentLength)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if status == http.StatusInternalServerError {
			// The reason names a file of the server: for its log only.
			why = "see the server's log"
		}
		http.Error(w, http.StatusText(status)+": "+why, status)
	}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, hookMethodNotAllowed, "method "+printable.Cut(r.Method, 20)+": registries POST their events")
		return
	}
	if !known {
		refuse(http.StatusNotFound, hookNotFound, "no webhook of that name in the config")
		return
	}
	select {
	case <-s.stopping:
		// No cycle would start for it: a 503 has the sender try again
		// (another replica behind the Service, or this one restarted),
		// where a 202 would lose the push until the next schedule.
		w.Header().Set("Retry-After", "10")
		refuse(http.StatusServiceUnavailable, hookStopping, "this process is stopping and starts no cycle; send the event again")
		return
	default:
	}
	if r.ContentLength > MaxWebhookBody {
		refuse(http.StatusRequestEntityTooLarge, hookTooLarge, fmt.Sprintf("a body of %d bytes, over the limit of %d", r.ContentLength, MaxWebhookBody))
		return
	}
	// A token is checked before the body is read; a signature needs the
	// body, but not one without a signature at all.
	var signature []byte
	if hook.TokenFile != "" {
		want, err := secretfile.Read(hook.TokenFile)
		if err != nil {
			refuse(http.StatusInternalServerError, hookError, fmt.Sprintf("reading the webhook's tokenFile: %v", err))
			return
		}
		got, how := requestToken(r, hook.TokenInQuery)
		switch {
		case got == "":
			refuse(http.StatusUnauthorized, hookUnauthorized, "no token: send Authorization: Bearer TOKEN"+how)
			return
		case !tokensEqual(got, want):
			refuse(http.StatusUnauthorized, hookUnauthorized, "the token does not match")
			return
		}
	} else {
		var err error
		if signature, err = parseSignature(r.Header.Get(SignatureHeader)); err != nil {
			refuse(http.StatusUnauthorized, hookUnauthorized, err.Error())
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			refuse(http.StatusRequestEntityTooLarge, hookTooLarge, fmt.Sprintf("a body over the limit of %d bytes", MaxWebhookBody))
			return
		}
		refuse(http.StatusBadRequest, hookBadRequest, fmt.Sprintf("reading the body: %v", err))
		return
	}
	if hook.SecretFile != "" {
		key, err := secretfile.Read(hook.SecretFile)
		if err != nil {
			refuse(http.StatusInternalServerError, hookError, fmt.Sprintf("reading the webhook's secretFile: %v", err))
			return
		}
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write(body)
		if !hmac.Equal(mac.Sum(nil), signature) {
			refuse(http.StatusUnauthorized, hookUnauthorized, "the signature does not match the body")
			return
		}
	}
	p, err := parsePayload(body, r.Header)
	if err != nil {
		refuse(http.StatusBadRequest, hookBadRequest, printable.Cut(err.Error(), 300))
		return
	}
	if p.Ping {
		s.metrics.webhooks.WithLabelValues(name, hookPing).Inc()
		s.hooks.record(name, WebhookRequest{Time: now, Status: http.StatusOK, Result: hookPing, Kind: p.Kind}, false)
		s.log.Info("webhook ping", "hook", name, "kind", p.Kind)
		writeJSON(w, http.StatusOK, hookResponse{Kind: p.Kind, Result: hookPing})
		return
	}
	resp := s.dispatch(name, p)
	s.metrics.webhooks.WithLabelValues(name, resp.Result).Inc()
	images := make([]string, 0, min(len(p.Pushes), maxListedImages))
	for _, ps := range p.Pushes[:min(len(p.Pushes), maxListedImages)] {
		images = append(images, ps.String())
	}
	s.hooks.record(name, WebhookRequest{Time: now, Status: http.StatusAccepted, Result: resp.Result, Kind: p.Kind, Images: images, Targets: resp.Targets}, false)
	s.log.Info("webhook accepted", "hook", name, "kind", p.Kind, "result", resp.Result,
		"images", images, "targets", resp.Targets, "not_owned", len(resp.NotOwned), "ignored", len(resp.Ignored), "skipped", p.Skipped)
	writeJSON(w, http.StatusAccepted, resp)
}

// dispatch triggers the targets of this process that watch the images of
// p, and says what became of each image.
func (s *Server) dispatch(hook string, p payload) hookResponse {
	resp := hookResponse{Kind: p.Kind, Skipped: p.Skipped}
	watchers := s.watchers()
	triggered := map[string]bool{}
	for _, ps := range p.Pushes {
		ws := watchers.repos[canonicalRepository(ps.Repository)]
		var mine bool
		for _, target := range ws {
			if !watchers.owned[target] {
				continue
			}
			mine = true
			if err := s.Trigger(target, "webhook "+hook+": "+ps.String()); err == nil {
				triggered[target] = true
			}
		}
		switch {
		case mine:
			resp.Triggered = append(resp.Triggered, ps.String())
			s.metrics.webhookImages.WithLabelValues(hook, hookTriggered).Inc()
		case len(ws) > 0:
			resp.NotOwned = append(resp.NotOwned, ps.String())
			s.metrics.webhookImages.WithLabelValues(hook, hookNotOwned).Inc()
		default:
			resp.Ignored = append(resp.Ignored, ps.String())
			s.metrics.webhookImages.WithLabelValues(hook, hookIgnored).Inc()
		}
	}
	for t := range triggered {
		resp.Targets = append(resp.Targets, t)
	}
	slices.Sort(resp.Targets)
	switch {
	case len(resp.Triggered) > 0:
		resp.Result = hookTriggered
	case len(resp.NotOwned) > 0:
		resp.Result = hookNotOwned
	case len(p.Pushes) == 0 && p.Skipped > 0:
		resp.Result = hookSkipped
	default:
		resp.Result = hookIgnored
	}
	return resp
}

// watchIndex maps each repository the config's policies watch (in
// canonical form) to the targets that apply such a policy, and says
// which targets this process owns.
type watchIndex struct {
	cfg   *config.Config
	repos map[string][]string
	owned map[string]bool
}

// watchers returns the index of the config in force, building it once
// per config (a webhook request must not cost targets × images).
func (s *Server) watchers() *watchIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	owned := make(map[string]bool, len(s.workers))
	for name := range s.workers {
		owned[name] = true
	}
	if s.watch != nil && s.watch.cfg == s.cfg {
		return &watchIndex{cfg: s.cfg, repos: s.watch.repos, owned: owned}
	}
	repos := map[string][]string{}
	for _, t := range s.cfg.Targets() {
		for _, im := range s.cfg.Images {
			if !t.Selects(im.Name) {
				continue
			}
			r := canonicalRepository(im.Repository)
			if ts := repos[r]; len(ts) == 0 || ts[len(ts)-1] != t.Name {
				repos[r] = append(ts, t.Name)
			}
		}
	}
	s.watch = &watchIndex{cfg: s.cfg, repos: repos}
	return &watchIndex{cfg: s.cfg, repos: repos, owned: owned}
}

// requestToken returns the bearer token of r (Authorization: Bearer T), or
// with query, the token query parameter; and, when there is none, a hint
// of where else it may come from.
func requestToken(r *http.Request, query bool) (token, hint string) {
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok), ""
	}
	if query {
		return r.URL.Query().Get("token"), " or ?token=TOKEN"
	}
	return "", ""
}

// tokensEqual compares two tokens in a time that depends on neither.
func tokensEqual(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// parseSignature reads "sha256=HEX".
func parseSignature(h string) ([]byte, error) {
	if h == "" {
		return nil, errors.New("no " + SignatureHeader + " header: sign the body with the webhook's secret (HMAC-SHA256)")
	}
	hx, ok := strings.CutPrefix(h, "sha256=")
	sig, err := hex.DecodeString(hx)
	if !ok || err != nil || len(sig) != sha256.Size {
		return nil, errors.New("malformed " + SignatureHeader + " header: want sha256= and 64 hexadecimal digits")
	}
	return sig, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
