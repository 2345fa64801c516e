// Package discover finds the container image references in a repository,
// proposes an image policy for each image repository, and works out the
// marker comments and the imagebump.yaml entries that would put them under
// imagebump's care. It is what `imagebump init` runs.
//
// Find walks a tree by the setters package's rules (YAML files only,
// symlinks that leave the root and .git never followed) and reads every
// document with kustomize's kyaml. It knows where images live:
//
//   - Kubernetes workloads: the containers, initContainers and
//     ephemeralContainers of Pod, Deployment, StatefulSet, DaemonSet, Job,
//     CronJob, ReplicaSet, ReplicationController and PodTemplate, and the
//     image volumes (volumes[].image.reference), at the paths kustomize's
//     images transformer uses; in other kinds (but CustomResourceDefinition)
//     any containers or initContainers list, as that transformer's default
//     filter finds them;
//   - kustomization images entries (newName, newTag, digest), in
//     kustomization files and in Flux Kustomization objects (spec.images);
//   - Helm values, in Flux HelmRelease spec.values, Argo CD Application
//     helm.valuesObject and helm.parameters, and values*.yaml files: the
//     image.repository + image.tag split, with image.registry and
//     image.digest, and image strings;
//   - Argo CD Application kustomize.images strings of the NAME:TAG form,
//     and the source overrides of .argocd-source-APP.yaml files (Argo CD
//     Image Updater's git write-back), read as an Application's source;
//   - docker-compose services' image.
//
// Multi-document files, files whose root is a list (of objects), anchors,
// aliases and merge keys (<<) are followed; a value reached through an
// alias is marked at its anchor. References that cannot be tracked (a
// digest with no tag, a variable, a Helm template, values inside a string)
// or are not this tool's to keep (in a file that says it is generated and
// not to be edited, the image a compose service builds) are listed with the
// reason, as are the kustomize.images strings a marker would break by
// rewriting them whole (NAME=NEWNAME:TAG, NAME:TAG@DIGEST) and Argo CD
// Image Updater's image list. A workload reference whose image a
// kustomization images entry sets, in every kustomization that builds it,
// is listed too: the entry is marked instead. A Flux Kustomization builds
// this repository's folders only when its sourceRef is this repository
// (see fluxsources.go): the source a Kustomization syncing the repository
// uses, or a GitRepository whose spec.url names the repository a remote of
// the checkout names (Find reads the remotes from the Git config of the
// checkout the root is in; see gitremotes.go). One of another source
// applies its targetNamespace and images entries to none of them.
//
// Propose groups the references by repository and proposes one policy per
// repository from the tags in use and, when given, the registry's tags; see
// Proposal. Markers works out the marker comments, inserted by
// setters.Insert byte-minimally and verified; AppendImages and NewConfig the
// config. The package does no network I/O: callers pass the registry's tags
// as data.
package discover
