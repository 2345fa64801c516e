//go:build !unix

package setters

import (
	"bytes"
	"os"
)

// readFile reads the file at path into buf.
func readFile(path string, buf *bytes.Buffer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf.Reset()
	_, err = buf.ReadFrom(f)
	return err
}
