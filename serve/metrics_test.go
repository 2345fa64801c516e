package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs /metrics from h and parses the exposition format.
func scrape(t testing.TB, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	return parseMetrics(t, rec.Body)
}

func parseMetrics(t testing.TB, body interface{ Read([]byte) (int, error) }) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// metricValue returns the value of the family's series whose labels
// include all of labels (name, value pairs), summed over matches, and
// whether any matched. Histograms give their sample count.
func metricValue(families map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	fam := families[name]
	if fam == nil {
		return 0, false
	}
	var sum float64
	found := false
outer:
	for _, m := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					ok = true
				}
			}
			if !ok {
				continue outer
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum, found
}

// counterValue scrapes s and returns one series' value.
func counterValue(t testing.TB, s *Server, name string, labels ...string) float64 {
	t.Helper()
	v, _ := metricValue(scrape(t, s.Handler()), name, labels...)
	return v
}
