// Package config loads and validates imagebump.yaml: the registries,
// image policies and Git targets imagebump works on.
//
// Loading is strict. The file is decoded by walking the YAML node tree, so
// that every problem (an unknown or duplicate key, a value of the wrong type,
// a rule broken) is reported with the file, line and column of the key or
// value at fault and the path of the key, such as
//
//	imagebump.yaml:12:5: images[0].policy: unknown key "semvar" (did you mean "semver"?)
//
// All problems found are returned together, ordered by position, so a user
// can fix them in one go. Each one is an *Error; the joined error unwraps to
// them.
//
// Rules a newcomer trips on:
//
//   - An image name is NAME or NAMESPACE:NAME. NAME is short for
//     default:NAME, and Load stores every name in the NAMESPACE:NAME form, so
//     markers may use either spelling.
//   - Relative file paths (dockerConfig, caFile, knownHostsFile and every key
//     ending in File) are resolved against the directory of the config file,
//     not the working directory. Load never reads these files: secrets may
//     rotate, and are read by the packages that use them, when they use them.
//   - Secrets are never written in the config itself, only as file
//     references. Secrets from the environment reach imagebump as files
//     (Kubernetes Secrets and systemd credentials mount as files).
//   - Defaults are applied on load and documented on each field: an image's
//     digest mode defaults to never, a commit author to imagebump
//     <imagebump@localhost>. Zero numbers (concurrency, burst) mean "the
//     default of the package that uses them".
//
// Schema holds the JSON Schema of the file, kept in step with the Go types
// by a test.
package config
