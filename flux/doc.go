// Package flux reads Flux's image automation objects (ImageRepository,
// ImagePolicy, ImageUpdateAutomation, GitRepository) and turns them into
// imagebump's native config, and a native config back into Flux objects.
//
// Load reads files and folders with kustomize's kyaml, as Flux does,
// building folders that hold a kustomization, and decodes each object
// strictly into Flux's own API types: a typo is an *Error with file, line
// and field. Set.Native maps the objects with Flux's semantics (policies
// named NAMESPACE:NAME, an exclusionList that replaces the defaults, one
// target per automation applying its namespace's policies, push refspec and
// options, Flux's commit message templates) and reports, in a Report, every
// field imagebump does not take as Flux does. Export goes the other way.
//
// Rules a newcomer trips on:
//
//   - Secrets are not in Git: Secrets (a mapping file, or a folder laid out
//     as mounted Secrets) says where each Secret's keys are.
//   - Registry settings are per host in imagebump, per ImageRepository in
//     Flux: repositories of one host must agree on credentials.
//   - Objects out of a kustomize build have no field positions: errors
//     point at the object, and say it was built.
//   - Templates written for Flux are rendered by internal/fluxmsg, over
//     Flux's data; MessageInput builds its input for a target.
//
// docs/flux.md is the user's side of this package.
package flux
