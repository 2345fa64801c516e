// Package deps pins the module's planned dependencies in go.mod while the
// packages that use them are being written. It is removed once every
// dependency has a real importer.
package deps

import (
	_ "github.com/ProtonMail/go-crypto/openpgp"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/go-git/go-git/v5/plumbing/transport/http"
	_ "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	_ "github.com/google/go-cmp/cmp"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/time/rate"
)

// Pull request providers (issue 5).
import (
	_ "code.gitea.io/sdk/gitea"
	_ "github.com/google/go-github/v93/github"
	_ "gitlab.com/gitlab-org/api/client-go"
)
