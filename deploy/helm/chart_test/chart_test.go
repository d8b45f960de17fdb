package chart_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// The defaults render every object of the chart, each decoding strictly.
func TestDefaults(t *testing.T) {
	objs := decode(t, render(t, ""))
	want := []string{
		"ClusterRole/goodput-exporter", "ClusterRoleBinding/goodput-exporter",
		"ConfigMap/goodput-exporter", "DaemonSet/goodput-exporter",
		"Service/goodput-exporter", "ServiceAccount/goodput-exporter", "ServiceMonitor/goodput-exporter",
	}
	// Plus one PrometheusRule per rule file and one ConfigMap per
	// dashboard (TestRulesAndDashboardsAreTheSources checks their content).
	for _, f := range glob(t, root+"/dashboards/*.json") {
		want = append(want, "ConfigMap/goodput-exporter-dashboard-"+strings.TrimSuffix(f, ".json"))
	}
	for _, name := range ruleObjects(t) {
		want = append(want, "PrometheusRule/"+name)
	}
	slices.Sort(want)
	if got := kinds(objs); !reflect.DeepEqual(got, want) {
		t.Errorf("objects\n got %q\nwant %q", got, want)
	}
	ds := daemonSet(t, objs, "goodput-exporter")
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	mustContain(t, "args", c.Args,
		"--config.file=/etc/goodput-exporter/config/config.yml", "--web.listen-address=:9835",
		"--collect.interval=5s", "--gpu.backend=auto",
		"--gpu.pod-resources.socket=/var/lib/kubelet/pod-resources/kubelet.sock", "--kubernetes.discovery")
	mustLack(t, "args", c.Args, "--no-kubernetes.prometheus-annotations", "--web.config.file", "--kubernetes.pod-label")
	if e, ok := envValue(c, "NODE_NAME"); !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME must come from the downward API's spec.nodeName: %+v", e)
	}
	if pod.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("not restricted to GPU nodes: %v", pod.NodeSelector)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "nvidia.com/gpu" || pod.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v, want the nvidia.com/gpu taint tolerated", pod.Tolerations)
	}
	if pod.RuntimeClassName != nil || pod.PriorityClassName != "" {
		t.Errorf("runtime class %v and priority class %q must be opt-in", pod.RuntimeClassName, pod.PriorityClassName)
	}
	if c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/-/ready" || c.LivenessProbe.HTTPGet.Path != "/-/healthy" {
		t.Errorf("probes: %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	// Requests and limits as values.yaml justifies them from docs/benchmarks.md.
	if r := c.Resources; r.Requests.Cpu().String() != "20m" || r.Requests.Memory().String() != "64Mi" ||
		r.Limits.Memory().String() != "192Mi" || !r.Limits.Cpu().IsZero() {
		t.Errorf("resources %+v", r)
	}

	svc := objs["Service/goodput-exporter"].(*corev1.Service)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !reflect.DeepEqual(svc.Spec.Selector, ds.Spec.Selector.MatchLabels) {
		t.Errorf("service: clusterIP %q selector %v, want headless on the DaemonSet's %v", svc.Spec.ClusterIP, svc.Spec.Selector, ds.Spec.Selector.MatchLabels)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the DaemonSet's selector %s=%s does not select its pods", k, v)
		}
	}
	sm := objs["ServiceMonitor/goodput-exporter"].(*monitoringv1.ServiceMonitor)
	if !reflect.DeepEqual(sm.Spec.Selector.MatchLabels, svc.Labels) && !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
		t.Errorf("the ServiceMonitor's selector %v does not select the service %v", sm.Spec.Selector.MatchLabels, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || svc.Spec.Ports[0].Name != "metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, service ports %+v", sm.Spec.Endpoints, svc.Spec.Ports)
	}

	// The configuration is one the daemon accepts, with the chart's SLO.
	cm := objs["ConfigMap/goodput-exporter"].(*corev1.ConfigMap)
	cfg, err := config.Parse([]byte(cm.Data["config.yml"]))
	if err != nil {
		t.Fatalf("the chart's config.yml is refused by the daemon: %v\n%s", err, cm.Data["config.yml"])
	}
	if len(cfg.SLOs) != 1 || cfg.SLOs[0].Name != "chat" {
		t.Errorf("SLOs %+v", cfg.SLOs)
	}
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// Least privilege: non-root, read-only root filesystem, no privilege
// escalation, every capability dropped, no host namespaces, the
// pod-resources socket read-only; RBAC exactly get/list/watch on pods.
func TestSecurity(t *testing.T) {
	for name, vals := range map[string]string{"defaults": "", "nvml": "gpu: {runtimeClassName: nvidia}", "web": webValues} {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, render(t, vals))
			pod := daemonSet(t, objs, "goodput-exporter").Spec.Template.Spec
			if pod.HostNetwork || pod.HostPID || pod.HostIPC {
				t.Error("the pod shares a host namespace")
			}
			ps := pod.SecurityContext
			if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v", ps)
			}
			for _, c := range pod.Containers {
				sc := c.SecurityContext
				switch {
				case sc == nil:
					t.Fatalf("%s has no security context", c.Name)
				case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0:
					t.Errorf("%s may run as root", c.Name)
				case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
					t.Errorf("%s has a writable root filesystem", c.Name)
				case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
					t.Errorf("%s allows privilege escalation", c.Name)
				case sc.Privileged != nil && *sc.Privileged:
					t.Errorf("%s is privileged", c.Name)
				case sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
					t.Errorf("%s capabilities %+v, want all dropped and none added", c.Name, sc.Capabilities)
				}
				for _, m := range c.VolumeMounts {
					if !m.ReadOnly {
						t.Errorf("%s mounts %s writable", c.Name, m.Name)
					}
				}
			}
			var hostPaths []string
			for _, v := range pod.Volumes {
				if v.HostPath != nil {
					hostPaths = append(hostPaths, v.HostPath.Path)
				}
			}
			if !reflect.DeepEqual(hostPaths, []string{"/var/lib/kubelet/pod-resources"}) {
				t.Errorf("host paths %q, want the pod-resources directory only", hostPaths)
			}

			var roles []string
			for k := range objs {
				if strings.Contains(k, "Role") && !strings.HasPrefix(k, "ClusterRole/") && !strings.HasPrefix(k, "ClusterRoleBinding/") {
					roles = append(roles, k)
				}
			}
			if len(roles) != 0 {
				t.Errorf("unexpected roles %v", roles)
			}
			cr := objs["ClusterRole/goodput-exporter"].(*rbacv1.ClusterRole)
			want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}
			if !reflect.DeepEqual(cr.Rules, want) || cr.AggregationRule != nil {
				t.Errorf("ClusterRole rules %+v, want exactly get/list/watch on pods", cr.Rules)
			}
			crb := objs["ClusterRoleBinding/goodput-exporter"].(*rbacv1.ClusterRoleBinding)
			wantSubj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: pod.ServiceAccountName, Namespace: namespace}}
			if crb.RoleRef.Name != cr.Name || crb.RoleRef.Kind != "ClusterRole" || !reflect.DeepEqual(crb.Subjects, wantSubj) {
				t.Errorf("binding %+v %+v, want %s to the pod's service account", crb.RoleRef, crb.Subjects, cr.Name)
			}
		})
	}
}

const webValues = `
webConfig:
  enabled: true
  config:
    tls_server_config:
      cert_file: /etc/goodput-exporter/web/tls.crt
      key_file: /etc/goodput-exporter/web/tls.key
  files:
    tls.crt: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    tls.key: "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----"
serviceMonitor:
  scheme: https
  tlsConfig:
    insecureSkipVerify: true
`

// Values other than the defaults: each switch shows in what is rendered.
func TestNonDefaultValues(t *testing.T) {
	t.Run("discovery and GPU settings", func(t *testing.T) {
		objs := decode(t, render(t, `
fullnameOverride: gx
discovery:
  prometheusAnnotations: false
  podLabels: [app.kubernetes.io/name, team]
collectInterval: 2s
gpu:
  backend: dcgm-exporter
  dcgmExporterURL: http://$(NODE_IP):9400/metrics
  runtimeClassName: nvidia
priorityClassName: system-node-critical
extraArgs: [--log.level=debug]
serviceMonitor:
  labels: {release: prometheus}
dashboards:
  namespace: grafana
  label: grafana_dashboard_custom
`))
		ds := daemonSet(t, objs, "gx")
		pod := ds.Spec.Template.Spec
		c := pod.Containers[0]
		mustContain(t, "args", c.Args, "--kubernetes.discovery", "--no-kubernetes.prometheus-annotations",
			"--kubernetes.pod-label=app.kubernetes.io/name", "--kubernetes.pod-label=team", "--collect.interval=2s",
			"--gpu.backend=dcgm-exporter", "--gpu.dcgm-exporter.url=http://$(NODE_IP):9400/metrics", "--log.level=debug")
		if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" || pod.PriorityClassName != "system-node-critical" {
			t.Errorf("runtime class %v, priority class %q", pod.RuntimeClassName, pod.PriorityClassName)
		}
		if e, ok := envValue(c, "NVIDIA_VISIBLE_DEVICES"); !ok || e.Value != "all" {
			t.Errorf("NVML through the runtime class needs NVIDIA_VISIBLE_DEVICES=all, got %+v", e)
		}
		if e, ok := envValue(c, "NODE_IP"); !ok || e.ValueFrom.FieldRef.FieldPath != "status.hostIP" {
			t.Errorf("$(NODE_IP) in the dcgm-exporter URL needs NODE_IP from status.hostIP: %+v", e)
		}
		if sm := objs["ServiceMonitor/gx"].(*monitoringv1.ServiceMonitor); sm.Labels["release"] != "prometheus" {
			t.Errorf("ServiceMonitor labels %v", sm.Labels)
		}
		cm := objs["ConfigMap/gx-dashboard-goodput-overview"].(*corev1.ConfigMap)
		if cm.Namespace != "grafana" || cm.Labels["grafana_dashboard_custom"] != "1" {
			t.Errorf("dashboard ConfigMap in %q with labels %v", cm.Namespace, cm.Labels)
		}
	})

	t.Run("web config", func(t *testing.T) {
		objs := decode(t, render(t, webValues))
		c := daemonSet(t, objs, "goodput-exporter").Spec.Template.Spec.Containers[0]
		mustContain(t, "args", c.Args, "--web.config.file=/etc/goodput-exporter/web/web-config.yml")
		if c.ReadinessProbe.TCPSocket == nil || c.LivenessProbe.TCPSocket == nil {
			t.Errorf("with TLS or basic auth an HTTP probe fails: %+v", c.ReadinessProbe)
		}
		sec, ok := objs["Secret/goodput-exporter-web-config"].(*corev1.Secret)
		if !ok {
			t.Fatalf("no web config Secret among %s", fmtKinds(objs))
		}
		var web map[string]any
		if err := yaml.Unmarshal([]byte(sec.StringData["web-config.yml"]), &web); err != nil || web["tls_server_config"] == nil {
			t.Errorf("web-config.yml %q: %v", sec.StringData["web-config.yml"], err)
		}
		if !strings.HasPrefix(sec.StringData["tls.crt"], "-----BEGIN CERTIFICATE-----\nMIIB") {
			t.Errorf("tls.crt %q", sec.StringData["tls.crt"])
		}
		sm := objs["ServiceMonitor/goodput-exporter"].(*monitoringv1.ServiceMonitor)
		if sm.Spec.Endpoints[0].Scheme == nil || *sm.Spec.Endpoints[0].Scheme != "https" || sm.Spec.Endpoints[0].TLSConfig == nil {
			t.Errorf("ServiceMonitor endpoint %+v", sm.Spec.Endpoints[0])
		}
	})

	t.Run("rbac.nodeCheck", func(t *testing.T) {
		objs := decode(t, render(t, `rbac: {nodeCheck: true}`))
		cr := objs["ClusterRole/goodput-exporter"].(*rbacv1.ClusterRole)
		want := []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		}
		if !reflect.DeepEqual(cr.Rules, want) {
			t.Errorf("ClusterRole rules %+v, want %+v", cr.Rules, want)
		}
	})

	t.Run("everything optional off", func(t *testing.T) {
		objs := decode(t, render(t, `
discovery: {enabled: false}
rbac: {create: false}
serviceAccount: {create: false, name: existing}
existingConfigMap: my-config
podResources: {enabled: false}
serviceMonitor: {enabled: false}
prometheusRule: {enabled: false}
dashboards: {enabled: false}
`))
		want := []string{"DaemonSet/goodput-exporter", "Service/goodput-exporter"}
		if got := kinds(objs); !reflect.DeepEqual(got, want) {
			t.Errorf("objects %q, want %q", got, want)
		}
		pod := daemonSet(t, objs, "goodput-exporter").Spec.Template.Spec
		mustLack(t, "args", pod.Containers[0].Args, "--kubernetes.", "--gpu.pod-resources")
		if pod.ServiceAccountName != "existing" || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("service account %q, automount %v: without discovery no token is needed", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
		}
		if pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "my-config" || len(pod.Volumes) != 1 {
			t.Errorf("volumes %+v, want my-config only", pod.Volumes)
		}
	})
}

// The chart's copies of the rules and dashboards are the repository's
// (make chart-sync), and the PrometheusRule and dashboard ConfigMaps carry
// them unchanged.
func TestRulesAndDashboardsAreTheSources(t *testing.T) {
	for _, c := range []struct{ src, copy string }{
		{root + "/rules/*.yml", chartDir + "/files/rules/*.yml"},
		{root + "/dashboards/*.json", chartDir + "/files/dashboards/*.json"},
	} {
		src, cp := glob(t, c.src), glob(t, c.copy)
		if len(src) == 0 || !reflect.DeepEqual(src, cp) {
			t.Errorf("%s has %q, the chart %q: run make chart-sync", c.src, src, cp)
			continue
		}
		dir, cdir := strings.TrimSuffix(c.src, "/"+filepathBase(c.src)), strings.TrimSuffix(c.copy, "/"+filepathBase(c.copy))
		for _, f := range src {
			if readFile(t, dir+"/"+f) != readFile(t, cdir+"/"+f) {
				t.Errorf("%s differs from the chart's copy: run make chart-sync", f)
			}
		}
	}

	objs := decode(t, render(t, ""))
	rules := 0
	for _, f := range glob(t, root+"/rules/*.yml") {
		var src struct {
			Groups []map[string]any `json:"groups"`
		}
		if err := yaml.Unmarshal([]byte(readFile(t, root+"/rules/"+f)), &src); err != nil {
			t.Fatalf("rules/%s: %v", f, err)
		}
		if len(src.Groups) == 0 {
			continue // not a rule file
		}
		rules++
		name := "PrometheusRule/" + ruleObject(f)
		pr, ok := objs[name].(*monitoringv1.PrometheusRule)
		if !ok {
			t.Errorf("no %s among %s", name, fmtKinds(objs))
			continue
		}
		// Both sides as generic JSON: the rule file's groups and the
		// rendered ones must be the same data.
		got, _ := json.Marshal(pr.Spec.Groups)
		var gotGroups []map[string]any
		json.Unmarshal(got, &gotGroups)
		want, _ := json.Marshal(src.Groups)
		var wantGroups []map[string]any
		json.Unmarshal(want, &wantGroups)
		if len(wantGroups) == 0 || !reflect.DeepEqual(gotGroups, wantGroups) {
			t.Errorf("%s groups differ from rules/%s\n got %s\nwant %s", name, f, got, want)
		}
	}
	var prs []string
	for _, k := range kinds(objs) {
		if strings.HasPrefix(k, "PrometheusRule/") {
			prs = append(prs, k)
		}
	}
	if rules == 0 || len(prs) != rules {
		t.Errorf("%d rule files in rules/, PrometheusRules %q", rules, prs)
	}
	for _, f := range glob(t, root+"/dashboards/*.json") {
		name := "ConfigMap/goodput-exporter-dashboard-" + strings.TrimSuffix(f, ".json")
		cm, ok := objs[name].(*corev1.ConfigMap)
		if !ok {
			t.Errorf("no %s among %s", name, fmtKinds(objs))
			continue
		}
		if cm.Labels["grafana_dashboard"] != "1" {
			t.Errorf("%s labels %v: the Grafana sidecar looks for grafana_dashboard", name, cm.Labels)
		}
		if got, want := cm.Data[f], strings.TrimRight(readFile(t, root+"/dashboards/"+f), "\n"); got != want {
			t.Errorf("%s data[%s] is not dashboards/%s (%d bytes, want %d)", name, f, f, len(got), len(want))
		}
		if !json.Valid([]byte(cm.Data[f])) {
			t.Errorf("%s: not JSON", name)
		}
	}
}

// ruleObject is the PrometheusRule a rule file becomes.
func ruleObject(file string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(file, ".yml"), ".rules")
	return "goodput-exporter-" + strings.ToLower(strings.NewReplacer(".", "-", "_", "-").Replace(base))
}

// ruleObjects are the PrometheusRules of rules/*.yml: the files with groups.
func ruleObjects(t *testing.T) []string {
	var out []string
	for _, f := range glob(t, root+"/rules/*.yml") {
		var src struct {
			Groups []any `json:"groups"`
		}
		if err := yaml.Unmarshal([]byte(readFile(t, root+"/rules/"+f)), &src); err != nil {
			t.Fatalf("rules/%s: %v", f, err)
		}
		if len(src.Groups) > 0 {
			out = append(out, ruleObject(f))
		}
	}
	return out
}

func filepathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// The image the chart runs is the one the Dockerfile builds: same
// repository as make image, same user, same port, no command of its own
// (the Dockerfile's ENTRYPOINT runs); every flag the chart passes exists.
func TestImageAgreesWithDockerfile(t *testing.T) {
	values := map[string]any{}
	if err := yaml.Unmarshal([]byte(readFile(t, chartDir+"/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	repo := values["image"].(map[string]any)["repository"]
	makefile := readFile(t, root+"/Makefile")
	if m := regexp.MustCompile(`(?m)^IMAGE \?= (\S+)$`).FindStringSubmatch(makefile); m == nil || m[1] != repo {
		t.Errorf("make image builds %v, the chart runs %v", m, repo)
	}
	dockerfile := readFile(t, root+"/Dockerfile")
	objs := decode(t, render(t, ""))
	pod := daemonSet(t, objs, "goodput-exporter").Spec.Template.Spec
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, repo.(string)+":") {
		t.Errorf("image %s", c.Image)
	}
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(dockerfile)
	if user == nil || itoa(*c.SecurityContext.RunAsUser) != user[1] || itoa(*c.SecurityContext.RunAsGroup) != user[2] {
		t.Errorf("Dockerfile USER %v, chart runs as %d:%d", user, *c.SecurityContext.RunAsUser, *c.SecurityContext.RunAsGroup)
	}
	expose := regexp.MustCompile(`(?m)^EXPOSE (\d+)$`).FindStringSubmatch(dockerfile)
	if expose == nil || itoa(int64(c.Ports[0].ContainerPort)) != expose[1] {
		t.Errorf("Dockerfile EXPOSE %v, chart port %d", expose, c.Ports[0].ContainerPort)
	}
	if len(c.Command) != 0 || !strings.Contains(dockerfile, `ENTRYPOINT ["/usr/bin/goodput-exporter"]`) {
		t.Errorf("command %q: the chart must run the Dockerfile's ENTRYPOINT", c.Command)
	}

	// Every flag the chart can pass is one the daemon defines.
	var src strings.Builder
	for _, f := range glob(t, root+"/cmd/exporter/*.go") {
		src.WriteString(readFile(t, root+"/cmd/exporter/"+f))
	}
	all := decode(t, render(t, webValues+"\ngpu: {dcgmAddress: 'localhost:5555', dcgmExporterURL: 'http://x/metrics'}\ndiscovery: {prometheusAnnotations: false, podLabels: [a]}"))
	args := daemonSet(t, all, "goodput-exporter").Spec.Template.Spec.Containers[0].Args
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.TrimPrefix(name, "no-")
		if !strings.Contains(src.String(), `name:"`+name+`"`) {
			t.Errorf("the chart passes %s, which the daemon does not define", a)
		}
	}
	if len(args) < 10 {
		t.Errorf("only %d args checked: %q", len(args), args)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
