//go:build !unix

package setters

import (
	"bytes"
	"os"
)

// otherFlags open a file that is not scanned (run.otherFile).
const otherFlags = os.O_RDONLY

// readFile reads the regular file at path into buf, unless it is larger
// than limit bytes; see the Unix version.
func readFile(path string, buf *bytes.Buffer, limit int64) error {
	return readFileKey(path, buf, limit, nil)
}

// readFileKey is readFile that also fills key, when not nil, from the
// file read, for the marker index.
func readFileKey(path string, buf *bytes.Buffer, limit int64, key *statKey) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errNotRegular
	}
	if key != nil {
		*key = keyOf(fi)
	}
	buf.Reset()
	if limit > 0 && fi.Size() > limit {
		marked, err := scanForToken(f.Read)
		if err != nil {
			return err
		}
		return &TooLargeError{Size: fi.Size(), Limit: limit, Marked: marked}
	}
	_, err = buf.ReadFrom(f)
	return err
}
