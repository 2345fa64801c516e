//go:build !unix

package hostile

import "testing"

// refusedPort holds no port where sockets are not Unix ones: Refused
// returns a port that was free a moment ago.
func refusedPort(testing.TB) (string, bool) { return "", false }
