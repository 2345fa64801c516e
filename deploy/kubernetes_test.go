package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/imagebump/imagebump/config"
)

// image is the image every imagebump container runs.
const image = "ghcr.io/imagebump/imagebump"

// namespace is where every namespaced object goes.
const namespace = "imagebump"

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// the component uses; it is not in k8s.io/api.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// build is the decoded output of one kustomization.
type build struct {
	name            string
	namespaces      []*corev1.Namespace
	serviceAccounts []*corev1.ServiceAccount
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	services        []*corev1.Service
	pvcs            []*corev1.PersistentVolumeClaim
	deployments     []*appsv1.Deployment
	statefulSets    []*appsv1.StatefulSet
	cronJobs        []*batchv1.CronJob
	serviceMonitors []*serviceMonitor
}

// podTemplate is one pod template of a build, with what owns it.
type podTemplate struct {
	owner string
	spec  *corev1.PodTemplateSpec
}

func (b *build) podTemplates() []podTemplate {
	var out []podTemplate
	for _, d := range b.deployments {
		out = append(out, podTemplate{"Deployment/" + d.Name, &d.Spec.Template})
	}
	for _, s := range b.statefulSets {
		out = append(out, podTemplate{"StatefulSet/" + s.Name, &s.Spec.Template})
	}
	for _, c := range b.cronJobs {
		out = append(out, podTemplate{"CronJob/" + c.Name, &c.Spec.JobTemplate.Spec.Template})
	}
	return out
}

// kustomizeFS copies deploy/kubernetes into an in-memory file system at
// /kubernetes, so that a build cannot read anything outside it, and adds
// one kustomization per component at /component-tests/NAME that applies
// it to the base.
func kustomizeFS(t *testing.T) (filesys.FileSystem, []string) {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	src := filepath.Join(repoRoot, "deploy", "kubernetes")
	var dirs []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := path.Join("/kubernetes", filepath.ToSlash(rel))
		if err := mem.WriteFile(dst, data); err != nil {
			return err
		}
		if d.Name() != "kustomization.yaml" {
			return nil
		}
		var k map[string]any
		if err := decodeStrict(data, &k); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		switch k["kind"] {
		case "Kustomization":
			dirs = append(dirs, path.Dir(dst))
		case "Component":
			name := path.Base(path.Dir(dst))
			test := "/component-tests/" + name
			kz := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../kubernetes/base]\ncomponents: [../../kubernetes/components/" + name + "]\n"
			if err := mem.WriteFile(test+"/kustomization.yaml", []byte(kz)); err != nil {
				return err
			}
			dirs = append(dirs, test)
		default:
			return fmt.Errorf("%s: kind %v", rel, k["kind"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	return mem, dirs
}

// runKustomize builds dir and decodes every object strictly into its
// Kubernetes API type: an unknown field is an error, and so is a kind the
// test does not know (add it here, with its checks) and any RBAC object.
func runKustomize(t *testing.T, fsys filesys.FileSystem, dir string) *build {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	b := &build{name: dir}
	for _, r := range rm.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		gvk := r.GetApiVersion() + "/" + r.GetKind()
		id := gvk + " " + r.GetName()
		if strings.HasPrefix(r.GetApiVersion(), "rbac.authorization.k8s.io/") {
			t.Errorf("%s: RBAC object %s; imagebump needs no Kubernetes API access", dir, id)
			continue
		}
		var obj any
		switch gvk {
		case "v1/Namespace":
			o := &corev1.Namespace{}
			b.namespaces, obj = append(b.namespaces, o), o
		case "v1/ServiceAccount":
			o := &corev1.ServiceAccount{}
			b.serviceAccounts, obj = append(b.serviceAccounts, o), o
		case "v1/ConfigMap":
			o := &corev1.ConfigMap{}
			b.configMaps, obj = append(b.configMaps, o), o
		case "v1/Secret":
			o := &corev1.Secret{}
			b.secrets, obj = append(b.secrets, o), o
		case "v1/Service":
			o := &corev1.Service{}
			b.services, obj = append(b.services, o), o
		case "v1/PersistentVolumeClaim":
			o := &corev1.PersistentVolumeClaim{}
			b.pvcs, obj = append(b.pvcs, o), o
		case "apps/v1/Deployment":
			o := &appsv1.Deployment{}
			b.deployments, obj = append(b.deployments, o), o
		case "apps/v1/StatefulSet":
			o := &appsv1.StatefulSet{}
			b.statefulSets, obj = append(b.statefulSets, o), o
		case "batch/v1/CronJob":
			o := &batchv1.CronJob{}
			b.cronJobs, obj = append(b.cronJobs, o), o
		case "monitoring.coreos.com/v1/ServiceMonitor":
			o := &serviceMonitor{}
			b.serviceMonitors, obj = append(b.serviceMonitors, o), o
		default:
			t.Errorf("%s: %s is of a kind this test does not check", dir, id)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Errorf("%s: %s does not decode strictly: %v", dir, id, err)
			continue
		}
		if r.GetKind() != "Namespace" && r.GetNamespace() != namespace {
			t.Errorf("%s: %s is in namespace %q, want %q", dir, id, r.GetNamespace(), namespace)
		}
	}
	return b
}

// TestKustomizations builds every kustomization under deploy/kubernetes
// (and the base with each component) and checks the objects: Pod Security
// "restricted" for every pod template, no API access, references that
// resolve, a config that loads with its secrets mounted where it reads
// them, and arguments imagebump accepts.
func TestKustomizations(t *testing.T) {
	fsys, dirs := kustomizeFS(t)
	want := []string{
		"/component-tests/persistent-workdir", "/component-tests/servicemonitor",
		"/kubernetes", "/kubernetes/base", "/kubernetes/overlays/cronjob", "/kubernetes/overlays/sharded",
	}
	if !slices.Equal(dirs, want) {
		t.Errorf("kustomizations found: %q, want %q", dirs, want)
	}
	for _, dir := range dirs {
		t.Run(strings.TrimPrefix(dir, "/"), func(t *testing.T) {
			b := runKustomize(t, fsys, dir)
			checkBuild(t, b)
			for _, sm := range b.serviceMonitors {
				if len(sm.Spec.Endpoints) == 0 || sm.Spec.Endpoints[0].Path != "/metrics" || !servicesMatch(b, sm.Spec.Selector.MatchLabels, sm.Spec.Endpoints[0].Port) {
					t.Errorf("ServiceMonitor %s scrapes no imagebump Service's /metrics", sm.Name)
				}
			}
		})
	}
}

func checkNamespace(t *testing.T, b *build) {
	t.Helper()
	if len(b.namespaces) != 1 || b.namespaces[0].Name != namespace {
		t.Fatalf("namespaces %v, want %s alone", b.namespaces, namespace)
	}
	for k, v := range map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/audit":   "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	} {
		if got := b.namespaces[0].Labels[k]; got != v {
			t.Errorf("namespace label %s = %q, want %q", k, got, v)
		}
	}
}

func checkServiceAccounts(t *testing.T, b *build) {
	t.Helper()
	for _, sa := range b.serviceAccounts {
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s mounts its token", sa.Name)
		}
	}
}

// checkPodSecurity asserts the Pod Security Standard "restricted" (and the
// baseline it includes) for a pod template, plus a read-only root file
// system, which imagebump adds.
func checkPodSecurity(t *testing.T, pt podTemplate) {
	t.Helper()
	spec := &pt.spec.Spec
	errorf := func(format string, args ...any) { t.Errorf(pt.owner+": "+format, args...) }
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		errorf("shares a host namespace")
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		errorf("pod runs as root")
	}
	if len(psc.Sysctls) > 0 {
		errorf("sets sysctls")
	}
	podSeccomp := psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	for _, v := range spec.Volumes {
		vs := v.VolumeSource
		if vs.ConfigMap == nil && vs.Secret == nil && vs.EmptyDir == nil && vs.PersistentVolumeClaim == nil &&
			vs.Projected == nil && vs.DownwardAPI == nil && vs.CSI == nil && vs.Ephemeral == nil {
			errorf("volume %s is of a type restricted forbids", v.Name)
		}
	}
	containers := append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		sc := c.SecurityContext
		if sc == nil {
			errorf("container %s has no securityContext", c.Name)
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			errorf("container %s is privileged", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			errorf("container %s does not drop ALL capabilities", c.Name)
		} else if add := sc.Capabilities.Add; len(add) > 0 {
			errorf("container %s adds capabilities %v", c.Name, add)
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			errorf("container %s: runAsNonRoot is not true", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			errorf("container %s runs as root", c.Name)
		}
		seccomp := podSeccomp
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault || sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost
		}
		if !seccomp {
			errorf("container %s has no RuntimeDefault seccomp profile", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			errorf("container %s: root file system is writable", c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				errorf("container %s uses host port %d", c.Name, p.HostPort)
			}
		}
	}
}

// checkPod checks a pod template beyond Pod Security: no token, the
// service account, references, resources, probes, and the imagebump
// command line with its config and secrets.
func checkPod(t *testing.T, b *build, pt podTemplate) {
	t.Helper()
	spec := &pt.spec.Spec
	errorf := func(format string, args ...any) { t.Errorf(pt.owner+": "+format, args...) }
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		errorf("the pod mounts a service account token")
	}
	if !slices.ContainsFunc(b.serviceAccounts, func(sa *corev1.ServiceAccount) bool { return sa.Name == spec.ServiceAccountName }) {
		errorf("service account %q is not in the build", spec.ServiceAccountName)
	}
	for k, v := range pt.spec.Labels {
		if pt.spec.Labels["app.kubernetes.io/name"] != "imagebump" {
			errorf("pod label %s=%s: want app.kubernetes.io/name=imagebump", k, v)
		}
	}
	// Every volume names an object of the build (kustomize renames
	// generated ones with a hash; a reference it missed is caught here).
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil && !slices.ContainsFunc(b.configMaps, func(o *corev1.ConfigMap) bool { return o.Name == v.ConfigMap.Name }):
			errorf("volume %s: ConfigMap %q is not in the build", v.Name, v.ConfigMap.Name)
		case v.Secret != nil && !slices.ContainsFunc(b.secrets, func(o *corev1.Secret) bool { return o.Name == v.Secret.SecretName }):
			errorf("volume %s: Secret %q is not in the build", v.Name, v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil && !slices.ContainsFunc(b.pvcs, func(o *corev1.PersistentVolumeClaim) bool { return o.Name == v.PersistentVolumeClaim.ClaimName }):
			errorf("volume %s: claim %q is not in the build", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("%s: %d containers, want imagebump alone", pt.owner, len(spec.Containers))
	}
	c := spec.Containers[0]
	if name, tag, ok := strings.Cut(c.Image, ":"); name != image || !ok || tag == "" {
		errorf("image %q, want %s with a tag", c.Image, image)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		errorf("container resources %v: want CPU and memory requests and a memory limit", c.Resources)
	}
	// The kubelet counts emptyDir volumes against the pod's
	// ephemeral-storage limit: a limit below their size limits evicts the
	// pod before the working copies reach theirs. Leave room for the
	// container's logs as well.
	if limit, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
		need := resource.MustParse("128Mi")
		for _, v := range spec.Volumes {
			if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
				need.Add(*v.EmptyDir.SizeLimit)
			}
		}
		if limit.Cmp(need) < 0 {
			errorf("ephemeral-storage limit %s is below the emptyDir volumes' size limits and 128Mi for logs (%s)", limit.String(), need.String())
		}
	}

	// A file path in the container resolves to a volume mount and the key
	// or item that provides it.
	files := map[string][]byte{} // path -> content, for ConfigMap and Secret files
	dirs := map[string]corev1.Volume{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			errorf("mount %s names no volume", m.Name)
			continue
		}
		dirs[m.MountPath] = v
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.ConfigMap != nil:
			items = v.ConfigMap.Items
			for _, o := range b.configMaps {
				if o.Name == v.ConfigMap.Name {
					data = map[string][]byte{}
					for k, s := range o.Data {
						data[k] = []byte(s)
					}
				}
			}
		case v.Secret != nil:
			items = v.Secret.Items
			for _, o := range b.secrets {
				if o.Name == v.Secret.SecretName {
					data = o.Data
				}
			}
		default:
			if m.ReadOnly {
				errorf("mount %s of a writable volume is read-only", m.Name)
			}
			continue
		}
		if !m.ReadOnly {
			errorf("mount %s of configuration or secrets is writable", m.Name)
		}
		if len(items) == 0 {
			for k, d := range data {
				files[path.Join(m.MountPath, k)] = d
			}
		}
		for _, it := range items {
			d, ok := data[it.Key]
			if !ok {
				errorf("mount %s: item key %q is not in the object", m.Name, it.Key)
			}
			files[path.Join(m.MountPath, it.Path)] = d
		}
	}

	args := c.Args
	if len(args) == 0 || (args[0] != "serve" && args[0] != "run") {
		t.Fatalf("%s: args %q, want serve or run", pt.owner, args)
	}
	checkArgs(t, args)
	flag := func(name string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		errorf("args %q have no --%s=VALUE", args, name)
		return ""
	}
	cfgPath := flag("config")
	data, ok := files[cfgPath]
	if !ok {
		t.Fatalf("%s: config %s is not a mounted file", pt.owner, cfgPath)
	}
	cfg, err := config.Parse(data, cfgPath)
	if err != nil {
		t.Fatalf("%s: the config does not load: %v", pt.owner, err)
	}
	secrets := secretPaths(cfg, args[0])
	if len(secrets) == 0 {
		errorf("the config reads no secret; the check below proves nothing")
	}
	for _, p := range secrets {
		if _, ok := files[p]; !ok {
			errorf("the config reads %s, which no mounted ConfigMap or Secret provides", p)
		}
	}
	if v, ok := dirs[flag("workdir")]; !ok || (v.EmptyDir == nil && v.PersistentVolumeClaim == nil) {
		errorf("--workdir is not on a writable volume")
	}
	if v, ok := dirs["/tmp"]; !ok || v.EmptyDir == nil {
		errorf("/tmp is not an emptyDir (the root file system is read-only)")
	}
	for _, e := range c.Env {
		if e.Name == "DOCKER_CONFIG" {
			if _, ok := files[path.Join(e.Value, "config.json")]; !ok {
				errorf("DOCKER_CONFIG=%s holds no mounted config.json", e.Value)
			}
		}
	}

	if args[0] == "serve" {
		ports := map[string]string{}
		for _, p := range c.Ports {
			ports[p.Name] = ":" + strconv.Itoa(int(p.ContainerPort))
		}
		// The probes have an address of their own, which clients holding
		// --listen's connections cannot hold.
		for _, fp := range []struct{ flag, port string }{{"listen", "http"}, {"health-listen", "health"}} {
			if l := flag(fp.flag); ports[fp.port] == "" || l != ports[fp.port] {
				errorf("--%s=%s, container port %s %q: want them equal", fp.flag, l, fp.port, ports[fp.port])
			}
		}
		for _, pr := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
			if pr.probe == nil || pr.probe.HTTPGet == nil || pr.probe.HTTPGet.Path != pr.path || pr.probe.HTTPGet.Port.String() != "health" {
				errorf("%s probe: want GET %s on port health", pr.name, pr.path)
			}
		}
		if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds < 60 {
			errorf("terminationGracePeriodSeconds too short for a cycle to finish")
		}
	}
}

// checkServices checks that each Service selects the pods and a port
// they have.
func checkServices(t *testing.T, b *build, tpls []podTemplate) {
	t.Helper()
	for _, s := range b.services {
		matched := false
		for _, pt := range tpls {
			if selects(s.Spec.Selector, pt.spec.Labels) {
				matched = true
				for _, p := range s.Spec.Ports {
					if !slices.ContainsFunc(pt.spec.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.String() }) {
						t.Errorf("Service %s: target port %s is not a container port", s.Name, p.TargetPort.String())
					}
				}
			}
		}
		if !matched {
			t.Errorf("Service %s selects no pod of the build", s.Name)
		}
	}
}

// checkWorkloads checks what each kind of workload must have.
func checkWorkloads(t *testing.T, b *build) {
	t.Helper()
	for _, d := range b.deployments {
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("Deployment %s: want one replica, replaced with Recreate (never two schedulers)", d.Name)
		}
		if len(b.services) == 0 {
			t.Errorf("Deployment %s has no Service for metrics and webhooks", d.Name)
		}
	}
	for _, c := range b.cronJobs {
		s := c.Spec
		if s.ConcurrencyPolicy != batchv1.ForbidConcurrent || s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds <= 0 {
			t.Errorf("CronJob %s: concurrencyPolicy %q, startingDeadlineSeconds %v; want Forbid and a deadline", c.Name, s.ConcurrencyPolicy, s.StartingDeadlineSeconds)
		}
		if p := s.JobTemplate.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever {
			t.Errorf("CronJob %s: restartPolicy %q, want Never", c.Name, p)
		}
	}
	for _, s := range b.statefulSets {
		i := slices.IndexFunc(b.services, func(svc *corev1.Service) bool { return svc.Name == s.Spec.ServiceName })
		if i < 0 || b.services[i].Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("StatefulSet %s: serviceName %q is not a headless Service of the build", s.Name, s.Spec.ServiceName)
		}
		shard := ""
		for _, a := range s.Spec.Template.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--shard="); ok {
				shard = v
			}
		}
		if s.Spec.Replicas == nil || shard != "auto/"+strconv.Itoa(int(*s.Spec.Replicas)) {
			t.Errorf("StatefulSet %s: --shard=%s with %v replicas; want --shard=auto/N with N the replicas", s.Name, shard, s.Spec.Replicas)
		}
	}
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func servicesMatch(b *build, labels map[string]string, port string) bool {
	return slices.ContainsFunc(b.services, func(s *corev1.Service) bool {
		return selects(labels, s.Labels) && slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port })
	})
}

// TestKustomizeExampleSecrets checks that the base's secrets are the
// documented placeholders, so that nobody mistakes them for a working
// setup, and that the Docker config secret is of the type kubelets and
// registries understand.
func TestKustomizeExampleSecrets(t *testing.T) {
	fsys, _ := kustomizeFS(t)
	b := runKustomize(t, fsys, "/kubernetes/base")
	if len(b.secrets) != 3 {
		t.Fatalf("%d secrets, want the git, registry and webhook examples", len(b.secrets))
	}
	for _, s := range b.secrets {
		for k, v := range s.Data {
			if !bytes.Contains(v, []byte("REPLACE")) && !bytes.Contains(v, []byte("UkVQTEFDRS1NRTpSRVBMQUNFLU1F")) {
				t.Errorf("secret %s key %s is not a REPLACE placeholder: %q", s.Name, k, v)
			}
		}
		if strings.HasPrefix(s.Name, "imagebump-registry-") {
			if s.Type != corev1.SecretTypeDockerConfigJson {
				t.Errorf("secret %s is of type %q, want %s", s.Name, s.Type, corev1.SecretTypeDockerConfigJson)
			}
			var dc struct {
				Auths map[string]struct {
					Auth string `json:"auth"`
				} `json:"auths"`
			}
			dec := json.NewDecoder(bytes.NewReader(s.Data[corev1.DockerConfigJsonKey]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&dc); err != nil || len(dc.Auths) == 0 {
				t.Errorf("secret %s: %s is not a Docker config.json: %v", s.Name, corev1.DockerConfigJsonKey, err)
			}
		}
	}
}

// checkBuild checks a build of one imagebump workload: its namespace,
// service accounts, pod security, pod, services and workload.
func checkBuild(t *testing.T, b *build) {
	t.Helper()
	checkNamespace(t, b)
	checkServiceAccounts(t, b)
	tpls := b.podTemplates()
	if len(tpls) != 1 {
		t.Fatalf("%d workloads, want 1", len(tpls))
	}
	for _, pt := range tpls {
		checkPodSecurity(t, pt)
		checkPod(t, b, pt)
	}
	checkServices(t, b, tpls)
	checkWorkloads(t, b)
}
