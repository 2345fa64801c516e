package config

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of imagebump.yaml. Editors use
// it for completion and checks; Load is the authority on what is valid, and a
// test keeps the two in step on keys, types and enumerations.
//
//go:embed schema.json
var Schema []byte
