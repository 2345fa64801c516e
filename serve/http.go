package serve

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes serves the endpoints (the first two again, alone, on the health
// address when there is one; see probeRoutes):
//
//	GET /healthz        200 while the process serves
//	GET /readyz         200 when ready, 503 with the reasons otherwise
//	GET /metrics                Prometheus exposition (serve's own registry)
//	GET /api/v1/status          the Status document as JSON
//	GET /api/v1/status?target=  the same, with that one target (404 if none)
//	GET /                       the status page: the same Status, as HTML
//	GET /targets/{name}         a target's page (page.go)
//	POST /hook/{name}           a registry push event (webhook.go)
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// Any method, so that a wrong one is refused with a log record, as
	// every refused webhook request is.
	mux.HandleFunc("/hook/{name...}", s.serveHook)
	pg := pages{status: s.Status, log: s.log}
	mux.HandleFunc("GET /{$}", pg.index)
	mux.HandleFunc("GET /targets/{name}", pg.target)
	s.handleProbes(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		st := s.Status()
		if q := r.URL.Query(); q.Has("target") {
			t, why := findTarget(st, q.Get("target"))
			if why != "" {
				http.Error(w, why, http.StatusNotFound)
				return
			}
			st.Targets = []TargetStatus{t}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
	return mux
}

// probeRoutes serves /healthz and /readyz alone, for the health address
// (Options.HealthListen).
func (s *Server) probeRoutes() http.Handler {
	mux := http.NewServeMux()
	s.handleProbes(mux)
	return mux
}

func (s *Server) handleProbes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		st := s.Status()
		s.logReadiness(st)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !st.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + strings.Join(st.NotReady, "; ") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}

// Handler returns the HTTP endpoints, for a caller that serves them
// itself (Run serves them on Options.Listener or Options.Listen).
func (s *Server) Handler() http.Handler { return s.handler }

// logReadiness logs, once each way, that /readyz turned to failing for a
// target that keeps failing (the pod leaves its Service's endpoints, and
// webhooks stop reaching it) and that it passes again. A stop is logged
// as such already.
func (s *Server) logReadiness(st Status) {
	failing := !st.Ready && !st.Stopping
	if s.unready.Swap(failing) == failing {
		return
	}
	if failing {
		s.log.Warn("not ready: /readyz answers 503 while a target keeps failing (--unready-after); the pod leaves its Service's endpoints until it passes", "why", strings.Join(st.NotReady, "; "))
		return
	}
	if !st.Stopping {
		s.log.Info("ready again: /readyz answers 200")
	}
}
