// Package cycle ties imagebump's parts together into one scan: it turns the
// config into registry settings and policies, lists the tags of every image
// repository, selects the latest tag per policy, resolves digests where a
// policy pins them, and hands the selection to the setters. The packages it
// joins (config, registry, policy, setters, gitwriter) never import each
// other; cycle is the only place that knows them all.
package cycle
