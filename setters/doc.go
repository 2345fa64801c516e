// Package setters finds Flux-style $imagepolicy marker comments in YAML files
// and rewrites the marked scalars, changing only their bytes.
//
// A marker is a YAML line comment holding the JSON object
// {"$imagepolicy": "NAMESPACE:NAME[:FIELD]"} on a scalar value:
//
//	image: ghcr.io/acme/app:1.4.2 # {"$imagepolicy": "apps:app"}
//	tag: 1.4.2                    # {"$imagepolicy": "apps:app:tag"}
//
// Apply walks a repository, reads only the files that can hold markers
// (*.yaml, *.yml and Kustomization files containing the text
// "$imagepolicy" in double quotes), finds each marked scalar with gopkg.in/yaml.v3
// and splices the new value into the original bytes. Everything outside the
// scalar (indentation, comments, quoting, line endings, a byte order mark)
// stays as it was. Each edited file is parsed again and compared with the
// original tree before it is written; a file that would read differently is
// left alone and reported. Changed files are written together at the end of
// a run, each through a temporary file renamed over it, so a cancelled run
// changes nothing.
//
// The package never fetches anything: callers pass the images their policies
// selected as plain data. Problems with single files or markers are collected
// in the Result and never stop the run.
package setters
