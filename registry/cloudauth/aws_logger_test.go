package cloudauth

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// TestAWSLogger: the SDK's warnings (a fall back to IMDSv1) reach
// imagebump's logger as warnings, in its format, and its debug lines as
// debug; nothing goes to stderr on its own.
func TestAWSLogger(t *testing.T) {
	var buf bytes.Buffer
	l := awsLogger{log: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Logf(logging.Warn, "falling back to IMDSv1: %s", "token request failed")
	l.Logf(logging.Debug, "request %d", 3)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], `"level":"WARN"`) || !strings.Contains(lines[0], `"msg":"aws sdk: falling back to IMDSv1: token request failed"`) ||
		!strings.Contains(lines[1], `"level":"DEBUG"`) || !strings.Contains(lines[1], `"msg":"aws sdk: request 3"`) {
		t.Errorf("logged:\n%s", buf.String())
	}
}
