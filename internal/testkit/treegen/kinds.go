package treegen

import (
	"bytes"
	"fmt"
	"strings"
)

// This file renders each kind of file. The content is made up but shaped
// like the real thing, with the sizes real files have.

func (g *gen) labels(s *spec) mapping {
	m := mapping{
		{key: "app.kubernetes.io/name", val: plain(s.app)},
		{key: "app.kubernetes.io/part-of", val: plain(s.team)},
	}
	if g.chance(50) {
		m = append(m, pair{key: "app.kubernetes.io/managed-by", val: plain("flux")})
	}
	return m
}

func (g *gen) metadata(s *spec, name string) mapping {
	return mapping{
		{key: "name", val: plain(name)},
		{key: "namespace", val: plain(s.team)},
		{key: "labels", val: g.labels(s)},
	}
}

// container returns one container of a pod spec.
func (g *gen) container(name string, img scalar) mapping {
	c := mapping{
		{key: "name", val: plain(name)},
		{key: "image", val: img},
		{key: "imagePullPolicy", val: plain("IfNotPresent")},
		{key: "ports", val: seq{mapping{
			{key: "name", val: plain("http")},
			{key: "containerPort", val: plain(fmt.Sprint(8000 + g.rng.IntN(1000)))},
			{key: "protocol", val: plain("TCP")},
		}}},
	}
	env := seq{}
	for i := range g.rng.IntN(6) {
		env = append(env, mapping{
			{key: "name", val: plain(fmt.Sprintf("SETTING_%d", i))},
			{key: "value", val: dq(fmt.Sprintf("value-%d", g.rng.IntN(100)))},
		})
	}
	if len(env) > 0 {
		c = append(c, pair{key: "env", val: env})
	}
	c = append(c,
		pair{key: "resources", val: mapping{
			{key: "requests", val: flow(fmt.Sprintf("{cpu: %dm, memory: %dMi}", 50*(1+g.rng.IntN(8)), 64*(1+g.rng.IntN(8))))},
			{key: "limits", val: mapping{
				{key: "cpu", val: plain(fmt.Sprintf("%dm", 500*(1+g.rng.IntN(4))))},
				{key: "memory", val: plain(fmt.Sprintf("%dMi", 256*(1+g.rng.IntN(4))))},
			}},
		}},
		pair{key: "readinessProbe", val: mapping{
			{key: "httpGet", val: mapping{{key: "path", val: plain("/healthz")}, {key: "port", val: plain("http")}}},
			{key: "periodSeconds", val: plain("10")},
		}, comment: pick(g, "", "Ready once the caches are warm.")},
		pair{key: "securityContext", val: mapping{
			{key: "runAsNonRoot", val: plain("true")},
			{key: "readOnlyRootFilesystem", val: plain("true")},
			{key: "capabilities", val: mapping{{key: "drop", val: flow(`["ALL"]`)}}},
		}},
	)
	return c
}

// podSpec returns a pod spec with a main container and perhaps a sidecar
// and an init container.
func (g *gen) podSpec(s *spec, mark bool) mapping {
	containers := seq{g.container(s.app, g.image(mark))}
	if g.chance(30) {
		containers = append(containers, g.container("sidecar", g.image(mark && g.chance(50))))
	}
	ps := mapping{{key: "serviceAccountName", val: plain(s.app)}}
	if g.chance(20) {
		ps = append(ps, pair{key: "initContainers", val: seq{mapping{
			{key: "name", val: plain("migrate")},
			{key: "image", val: g.image(mark && g.chance(50))},
			{key: "args", val: seq{plain("migrate"), plain("--to=latest")}},
		}}})
	}
	ps = append(ps,
		pair{key: "containers", val: containers},
		pair{key: "nodeSelector", val: mapping{{key: "kubernetes.io/os", val: plain("linux")}}},
	)
	return ps
}

// deployment returns a Deployment, often followed by its Service in the
// same file.
func (g *gen) deployment(s *spec, mark bool) []node {
	d := mapping{
		{key: "apiVersion", val: plain("apps/v1"), comment: fmt.Sprintf("%s in %s, owned by %s.", s.app, s.env, s.team)},
		{key: "kind", val: plain("Deployment")},
		{key: "metadata", val: g.metadata(s, s.app)},
		{key: "spec", val: mapping{
			{key: "replicas", val: plain(fmt.Sprint(1 + g.rng.IntN(5)))},
			{key: "revisionHistoryLimit", val: plain("5")},
			{key: "selector", val: mapping{{key: "matchLabels", val: mapping{{key: "app.kubernetes.io/name", val: plain(s.app)}}}}},
			{key: "template", val: mapping{
				{key: "metadata", val: mapping{
					{key: "labels", val: g.labels(s)},
					{key: "annotations", val: mapping{{key: "prometheus.io/scrape", val: dq("true")}}},
				}},
				{key: "spec", val: g.podSpec(s, mark)},
			}},
		}},
	}
	docs := []node{d}
	if g.chance(40) {
		docs = append(docs, g.service(s))
	}
	if g.chance(15) {
		docs = append(docs, g.configMap(s))
	}
	return docs
}

func (g *gen) cronJob(s *spec, mark bool) node {
	return mapping{
		{key: "apiVersion", val: plain("batch/v1")},
		{key: "kind", val: plain("CronJob")},
		{key: "metadata", val: g.metadata(s, s.app+"-nightly")},
		{key: "spec", val: mapping{
			{key: "schedule", val: dq(fmt.Sprintf("%d %d * * *", g.rng.IntN(60), g.rng.IntN(24)))},
			{key: "concurrencyPolicy", val: plain("Forbid")},
			{key: "jobTemplate", val: mapping{{key: "spec", val: mapping{
				{key: "backoffLimit", val: plain("2")},
				{key: "template", val: mapping{{key: "spec", val: append(mapping{
					{key: "restartPolicy", val: plain("OnFailure")},
				}, g.podSpec(s, mark)...)}}},
			}}}},
		}},
	}
}

func (g *gen) service(s *spec) node {
	return mapping{
		{key: "apiVersion", val: plain("v1")},
		{key: "kind", val: plain("Service")},
		{key: "metadata", val: g.metadata(s, s.app)},
		{key: "spec", val: mapping{
			{key: "type", val: plain("ClusterIP")},
			{key: "selector", val: mapping{{key: "app.kubernetes.io/name", val: plain(s.app)}}},
			{key: "ports", val: seq{mapping{
				{key: "name", val: plain("http")},
				{key: "port", val: plain("80")},
				{key: "targetPort", val: plain("http")},
			}}},
		}},
	}
}

func (g *gen) configMap(s *spec) node {
	var conf strings.Builder
	fmt.Fprintf(&conf, "# %s settings for %s\n", s.app, s.env)
	for i := range 5 + g.rng.IntN(40) {
		fmt.Fprintf(&conf, "%s.option%d = %d\n", s.app, i, g.rng.IntN(10000))
	}
	return mapping{
		{key: "apiVersion", val: plain("v1")},
		{key: "kind", val: plain("ConfigMap")},
		{key: "metadata", val: g.metadata(s, s.app+"-config")},
		{key: "data", val: mapping{
			{key: "LOG_LEVEL", val: plain(pick(g, "info", "debug", "warn"))},
			{key: "FEATURE_FLAGS", val: dq("search,checkout")},
			{key: "app.properties", val: block(conf.String())},
		}},
	}
}

func (g *gen) hpa(s *spec) node {
	return mapping{
		{key: "apiVersion", val: plain("autoscaling/v2")},
		{key: "kind", val: plain("HorizontalPodAutoscaler")},
		{key: "metadata", val: g.metadata(s, s.app)},
		{key: "spec", val: mapping{
			{key: "scaleTargetRef", val: mapping{
				{key: "apiVersion", val: plain("apps/v1")},
				{key: "kind", val: plain("Deployment")},
				{key: "name", val: plain(s.app)},
			}},
			{key: "minReplicas", val: plain("2")},
			{key: "maxReplicas", val: plain(fmt.Sprint(3 + g.rng.IntN(20)))},
			{key: "metrics", val: seq{mapping{
				{key: "type", val: plain("Resource")},
				{key: "resource", val: mapping{
					{key: "name", val: plain("cpu")},
					{key: "target", val: flow(fmt.Sprintf("{type: Utilization, averageUtilization: %d}", 50+g.rng.IntN(40)))},
				}},
			}}},
		}},
	}
}

func (g *gen) pdb(s *spec) node {
	return mapping{
		{key: "apiVersion", val: plain("policy/v1")},
		{key: "kind", val: plain("PodDisruptionBudget")},
		{key: "metadata", val: g.metadata(s, s.app)},
		{key: "spec", val: mapping{
			{key: "minAvailable", val: plain("1")},
			{key: "selector", val: mapping{{key: "matchLabels", val: mapping{{key: "app.kubernetes.io/name", val: plain(s.app)}}}}},
		}},
	}
}

// kustomization returns a kustomization; marked ones keep a policy's name,
// tag and digest apart in images:.
func (g *gen) kustomization(s *spec, mark bool) node {
	k := mapping{
		{key: "apiVersion", val: plain("kustomize.config.k8s.io/v1beta1")},
		{key: "kind", val: plain("Kustomization")},
		{key: "namespace", val: plain(s.team)},
		{key: "resources", val: seq{plain("deployment.yaml"), plain("service.yaml")}},
		{key: "labels", val: seq{mapping{
			{key: "pairs", val: mapping{{key: "team", val: plain(s.team)}}},
			{key: "includeSelectors", val: plain("false")},
		}}},
	}
	var images seq
	if mark {
		for range 1 + g.rng.IntN(2) {
			name, tag, digest := g.split()
			im := mapping{{key: "name", val: plain(s.app)}, {key: "newName", val: name}, {key: "newTag", val: tag}}
			if digest != nil {
				im = append(im, pair{key: "digest", val: *digest})
			}
			images = append(images, im)
		}
	} else if g.chance(50) {
		im := public[g.rng.IntN(len(public))]
		images = append(images, mapping{{key: "name", val: plain(im.name)}, {key: "newTag", val: g.quoted(plain(im.tag))}})
	}
	if len(images) > 0 {
		k = append(k, pair{key: "images", val: images, comment: "Image tags are kept current by automation."})
	}
	if g.chance(40) {
		k = append(k, pair{key: "configMapGenerator", val: seq{mapping{
			{key: "name", val: plain(s.app + "-env")},
			{key: "literals", val: seq{plain("ENV=" + s.env), plain("TEAM=" + s.team)}},
		}}})
	}
	return k
}

// values returns Helm values with the image split into repository and tag.
func (g *gen) values(s *spec, mark bool) node {
	var img mapping
	if mark {
		name, tag, digest := g.split()
		img = mapping{{key: "repository", val: name}, {key: "tag", val: tag}}
		if digest != nil {
			img = append(img, pair{key: "digest", val: *digest})
		}
	} else {
		im := public[g.rng.IntN(len(public))]
		img = mapping{{key: "repository", val: plain(im.name)}, {key: "tag", val: g.quoted(plain(im.tag))}}
	}
	img = append(img, pair{key: "pullPolicy", val: plain("IfNotPresent")})
	v := mapping{
		{key: "replicaCount", val: plain(fmt.Sprint(1 + g.rng.IntN(4))), comment: "Default values for " + s.app + "."},
		{key: "image", val: img},
		{key: "imagePullSecrets", val: seq{}},
		{key: "serviceAccount", val: mapping{{key: "create", val: plain("true")}, {key: "annotations", val: mapping{}}}},
		{key: "podAnnotations", val: mapping{}},
		{key: "service", val: mapping{{key: "type", val: plain("ClusterIP")}, {key: "port", val: plain("80")}}},
		{key: "ingress", val: mapping{
			{key: "enabled", val: plain(pick(g, "true", "false"))},
			{key: "hosts", val: seq{mapping{
				{key: "host", val: plain(s.app + "." + s.env + ".example.com")},
				{key: "paths", val: seq{mapping{{key: "path", val: plain("/")}, {key: "pathType", val: plain("Prefix")}}}},
			}}},
		}},
		{key: "resources", val: mapping{{key: "limits", val: flow("{cpu: 500m, memory: 256Mi}")}}},
	}
	if mark && g.chance(30) {
		v = append(v, pair{key: "worker", val: mapping{
			{key: "enabled", val: plain("true")},
			{key: "image", val: g.fullMarked()},
		}})
	}
	return v
}

// compose returns a docker-compose file with one or more services.
func (g *gen) compose(s *spec, mark bool) node {
	var services mapping
	for i := range 1 + g.rng.IntN(3) {
		name := s.app
		if i > 0 {
			name = fmt.Sprintf("%s-%d", s.app, i)
		}
		services = append(services, pair{key: name, val: mapping{
			{key: "image", val: g.image(mark && (i == 0 || g.chance(50)))},
			{key: "restart", val: plain("unless-stopped")},
			{key: "ports", val: flow(fmt.Sprintf(`["%d:8080"]`, 8000+i))},
			{key: "environment", val: seq{plain("LOG_LEVEL=info"), plain("ENV=" + s.env)}},
		}})
	}
	services = append(services, pair{key: "db", val: mapping{
		{key: "image", val: plain("docker.io/library/postgres:16.2")},
		{key: "volumes", val: seq{plain("db:/var/lib/postgresql/data")}},
	}})
	return mapping{
		{key: "services", val: services},
		{key: "volumes", val: mapping{{key: "db", val: mapping{}}}},
	}
}

// rootList returns a CI file whose root is a list of images to build.
func (g *gen) rootList(s *spec, mark bool) node {
	var items seq
	for i := range 1 + g.rng.IntN(4) {
		items = append(items, mapping{
			{key: "name", val: plain(fmt.Sprintf("%s-%d", s.app, i))},
			{key: "image", val: g.image(mark && (i == 0 || g.chance(50)))},
			{key: "platforms", val: flow("[linux/amd64, linux/arm64]")},
		})
	}
	return items
}

func (g *gen) chart(s *spec) node {
	return mapping{
		{key: "apiVersion", val: plain("v2")},
		{key: "name", val: plain(s.app)},
		{key: "description", val: plain("A Helm chart for " + s.app)},
		{key: "type", val: plain("application")},
		{key: "version", val: plain(fmt.Sprintf("0.%d.%d", g.rng.IntN(20), g.rng.IntN(10)))},
		{key: "appVersion", val: dq(fmt.Sprintf("1.%d.0", g.rng.IntN(10)))},
	}
}

func (g *gen) workflow(s *spec) node {
	return mapping{
		{key: "name", val: plain("build " + s.app)},
		{key: "on", val: mapping{{key: "push", val: mapping{{key: "branches", val: flow("[main]")}}}}},
		{key: "jobs", val: mapping{{key: "build", val: mapping{
			{key: "runs-on", val: plain("ubuntu-latest")},
			{key: "steps", val: seq{
				mapping{{key: "uses", val: plain("actions/checkout@v4")}},
				mapping{{key: "name", val: plain("Build")}, {key: "run", val: block("make build\nmake test\n")}},
				mapping{{key: "name", val: plain("Push")}, {key: "run", val: plain("make push TAG=${{ github.sha }}")}},
			}},
		}}}},
	}
}

func (g *gen) rules(s *spec) node {
	var rules seq
	for i := range 1 + g.rng.IntN(5) {
		rules = append(rules, mapping{
			{key: "alert", val: plain(fmt.Sprintf("%sHighErrorRate%d", strings.ReplaceAll(s.app, "-", ""), i))},
			{key: "expr", val: plain(fmt.Sprintf(`rate(http_requests_total{job="%s",code=~"5.."}[5m]) > 0.%d`, s.app, 1+g.rng.IntN(9)))},
			{key: "for", val: plain("10m")},
			{key: "labels", val: mapping{{key: "severity", val: plain(pick(g, "page", "ticket"))}}},
		})
	}
	return mapping{
		{key: "apiVersion", val: plain("monitoring.coreos.com/v1")},
		{key: "kind", val: plain("PrometheusRule")},
		{key: "metadata", val: g.metadata(s, s.app+"-rules")},
		{key: "spec", val: mapping{{key: "groups", val: seq{mapping{
			{key: "name", val: plain(s.app)},
			{key: "rules", val: rules},
		}}}}},
	}
}

// template writes a Helm template: a .yaml file that is not YAML until
// rendered, and has no markers.
func (g *gen) template(b *bytes.Buffer, s *spec) {
	fmt.Fprintf(b, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "%[1]s.fullname" . }}
  labels:
    {{- include "%[1]s.labels" . | nindent 4 }}
spec:
  {{- if not .Values.autoscaling.enabled }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  template:
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`, s.app)
}

// readme writes a README; some show a marker as documentation, which grep
// finds and imagebump does not read.
func (g *gen) readme(b *bytes.Buffer, s *spec) {
	fmt.Fprintf(b, "# %s\n\nOwned by %s. Deployed to %s by Flux from this repository.\n\n", s.app, s.team, s.env)
	for range 2 + g.rng.IntN(6) {
		b.WriteString("The service reads its settings from the ConfigMap next to its Deployment;\nchange them there and open a pull request. Do not edit the cluster directly.\n\n")
	}
	if g.chance(15) {
		p := &g.pols[g.rng.IntN(len(g.pols))]
		fmt.Fprintf(b, "The image tag is bumped automatically; the marker looks like this:\n\n    tag: 1.0.0 # {\"$imagepolicy\": \"%s:tag\"}\n", p.ref())
	}
}

// text writes notes, env examples or a Helm helper.
func (g *gen) text(b *bytes.Buffer, s *spec) {
	for i := range 5 + g.rng.IntN(30) {
		fmt.Fprintf(b, "%s_SETTING_%d=%d # %s\n", strings.ToUpper(strings.ReplaceAll(s.app, "-", "_")), i, g.rng.IntN(1000), s.env)
	}
}

// json writes a dashboard.
func (g *gen) json(b *bytes.Buffer, s *spec) {
	fmt.Fprintf(b, "{\n  \"title\": \"%s\",\n  \"tags\": [\"%s\", \"%s\"],\n  \"panels\": [\n", s.app, s.team, s.env)
	n := 2 + g.rng.IntN(10)
	for i := range n {
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(b, "    {\"id\": %d, \"type\": \"timeseries\", \"title\": \"p%d latency\", \"targets\": [{\"expr\": \"histogram_quantile(0.%d, rate(http_request_duration_seconds_bucket{job=\\\"%s\\\"}[5m]))\"}]}%s\n", i, 50+i, 50+i, s.app, sep)
	}
	b.WriteString("  ]\n}\n")
}
