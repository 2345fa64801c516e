package commands

import (
	"os"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgitea"
)

// TestMain stops the shared Gitea server, if a test started one.
func TestMain(m *testing.M) { os.Exit(testgitea.Main(m)) }
