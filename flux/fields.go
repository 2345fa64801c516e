package flux

import (
	"sort"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// fieldRule says what imagebump does with one field of a Flux kind: nil
// when it maps the field (see native.go), else a note.
type fieldRule struct {
	level Level
	msg   string
}

// mapped marks a field imagebump maps to its own model.
var mapped *fieldRule

// fieldRules lists, for each kind, every spec field of the API types
// (current version and previous beta), by path: a field (or a whole
// subtree) imagebump maps, or the note it gets when written. A test keeps
// the table complete against the API types, so that no field is dropped
// without a word.
var fieldRules = map[string]map[string]*fieldRule{
	KindImageRepository: {
		"spec.image":              mapped,
		"spec.exclusionList":      mapped,
		"spec.secretRef":          mapped,
		"spec.certSecretRef":      mapped,
		"spec.insecure":           mapped,
		"spec.provider":           mapped,
		"spec.suspend":            mapped,
		"spec.interval":           {Info, "tags are listed on each cycle of the targets that apply the policies using this repository; their schedule comes from the ImageUpdateAutomation's interval"},
		"spec.timeout":            {Info, "imagebump's registry client has its own per-request timeouts"},
		"spec.proxySecretRef":     {Warning, "not read: give imagebump the proxy in its environment (HTTPS_PROXY, NO_PROXY)"},
		"spec.serviceAccountName": {Warning, "not read: imagebump runs without cluster access, so the service account's image pull secrets are not used (map the pull secret with secretRef instead), nor, with a cloud provider, its workload identity: imagebump reads with its own cloud identity, so give that one access to this repository"},
		"spec.accessFrom":         {Info, "not read: cross-namespace access lists guard a cluster; imagebump reads every object it is given"},
	},
	KindImagePolicy: {
		"spec.imageRepositoryRef":     mapped,
		"spec.policy":                 mapped,
		"spec.filterTags":             mapped,
		"spec.digestReflectionPolicy": mapped,
		"spec.suspend":                mapped,
		"spec.interval":               {Info, "with digestReflectionPolicy Always, imagebump resolves the digest on every cycle of the target, not on this interval"},
	},
	KindImageUpdateAutomation: {
		"spec.sourceRef":      mapped,
		"spec.git.checkout":   mapped,
		"spec.git.commit":     mapped,
		"spec.git.push":       mapped,
		"spec.interval":       mapped,
		"spec.policySelector": mapped,
		"spec.update":         mapped,
		"spec.suspend":        mapped,
	},
	KindGitRepository: {
		"spec.url":                mapped,
		"spec.ref":                mapped,
		"spec.secretRef":          mapped,
		"spec.provider":           mapped,
		"spec.interval":           {Info, "imagebump fetches the repository on each cycle of its target; the target's schedule comes from the ImageUpdateAutomation's interval"},
		"spec.timeout":            {Info, "imagebump's Git operations have their own timeouts"},
		"spec.verify":             {Info, "not read: Flux's image automation does not verify the commits it builds on either"},
		"spec.proxySecretRef":     {Warning, "not read: give imagebump the proxy in its environment (HTTPS_PROXY, NO_PROXY)"},
		"spec.ignore":             {Info, "not read: ignore rules shape what Flux applies, not what image automation edits"},
		"spec.suspend":            {Info, "not read: suspending the source does not stop Flux's image automation either"},
		"spec.recurseSubmodules":  {Info, "not read: submodules are not scanned for markers (nor by Flux's image automation)"},
		"spec.include":            {Info, "not read: included repositories are not edited (nor by Flux's image automation)"},
		"spec.sparseCheckout":     {Info, "not read: imagebump scans the automation's update.path"},
		"spec.serviceAccountName": {Warning, "not read: imagebump runs without cluster access; map the Git credentials with secretRef instead"},
		"spec.gitImplementation":  {Info, "not read: imagebump always uses go-git (as Flux does since it removed the field)"},
		"spec.accessFrom":         {Info, "not read: cross-namespace access lists guard a cluster; imagebump reads every object it is given"},
	},
}

// noteFields records a note for every field of the object that imagebump
// does not map, a status, and values Flux's post-build substitution would
// change.
func noteFields(s *source, p *problems) {
	rules := fieldRules[s.obj.Kind]
	paths := make([]string, 0, len(rules))
	for path := range rules {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if r := rules[path]; r != nil && s.has(path) {
			p.note(r.level, s.obj, path, s.line(path), "%s", r.msg)
		}
	}
	if s.has("status") {
		p.note(Info, s.obj, "status", s.line("status"), "not read: it is the controllers' record; imagebump works out its own")
	}
	_, spec := lookup(s.node.YNode(), "spec")
	walkScalars(spec, "spec", func(path string, n *kyaml.Node) {
		if strings.Contains(n.Value, "${") {
			p.note(Warning, s.obj, path, s.line(path), "%q holds a ${...} variable, which a Flux Kustomization's postBuild substitution would replace; imagebump reads it as written", n.Value)
		}
	})
}

func walkScalars(n *kyaml.Node, path string, f func(string, *kyaml.Node)) {
	n = deref(n)
	if n == nil {
		return
	}
	switch n.Kind {
	case kyaml.ScalarNode:
		f(path, n)
	case kyaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkScalars(n.Content[i+1], path+"."+n.Content[i].Value, f)
		}
	case kyaml.SequenceNode:
		for i, c := range n.Content {
			walkScalars(c, path+"["+itoa(i)+"]", f)
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// substituted says, for an error about value, that a ${...} variable in
// it is left for a Flux Kustomization's postBuild substitution, which
// imagebump does not do; "" for a value without one.
func substituted(value string) string {
	if !strings.Contains(value, "${") {
		return ""
	}
	return " (it holds a ${...} variable, which a Flux Kustomization's postBuild substitution would fill in: imagebump reads the objects as written, so write the value out, or give imagebump the objects with the variables set)"
}
