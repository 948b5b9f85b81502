package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/services/artifacts"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	bridge "clopen.dev/services/mcp-bridge"
	"clopen.dev/services/streammgr"
)

// manifest is the part of a Kubernetes object the checks read.
type manifest struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		Template struct {
			Spec podSpec
		}
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		Egress []struct {
			Ports []struct{ Port int }
		}
	}
}

type podSpec struct {
	AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
	SecurityContext              struct {
		RunAsNonRoot   bool                  `yaml:"runAsNonRoot"`
		SeccompProfile struct{ Type string } `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name    string
		Image   string
		EnvFrom []struct {
			SecretRef *struct{ Name string } `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Env []struct {
			Name      string
			ValueFrom struct {
				SecretKeyRef struct{ Name, Key string } `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		}
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct{ Drop []string }
		} `yaml:"securityContext"`
		Resources struct {
			Requests, Limits map[string]string
		}
	}
}

// The shipped Kubernetes manifests keep the rules of a hosted deployment:
// every pod non-root with no capabilities, no privilege escalation, the
// runtime's seccomp profile and resource bounds; no service account token;
// the engine worker, whose agents run chosen commands, without the database
// secret and with an egress policy that leaves out Postgres.
// tokenKeysOf are the bus token keys each service reads.
var tokenKeysOf = map[string]bustoken.Need{
	gateway.Name: gateway.TokenKeys, streammgr.Name: streammgr.TokenKeys, artifacts.Name: artifacts.TokenKeys,
	worker.Name: worker.TokenKeys, bridge.Name: bridge.TokenKeys,
}

func TestKubernetesManifestsAreLockedDown(t *testing.T) {
	b, err := os.ReadFile("../../deploy/k8s/clopen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var pods []manifest
	var policies []manifest
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch m.Kind {
		case "Deployment", "Job":
			pods = append(pods, m)
		case "NetworkPolicy":
			policies = append(policies, m)
		}
	}
	if len(pods) < 6 {
		t.Fatalf("found %d deployments and jobs, want the migration and the five services", len(pods))
	}
	for _, m := range pods {
		ps := m.Spec.Template.Spec
		if !ps.SecurityContext.RunAsNonRoot || ps.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: pod securityContext %+v, want runAsNonRoot and the RuntimeDefault seccomp profile", m.Metadata.Name, ps.SecurityContext)
		}
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
			t.Errorf("%s: mounts a service account token", m.Metadata.Name)
		}
		for _, c := range ps.Containers {
			if err := pinned(c.Image); err != nil {
				t.Errorf("%s/%s: %v", m.Metadata.Name, c.Name, err)
			}
			sc := c.SecurityContext
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
				t.Errorf("%s/%s: securityContext %+v, want no privilege escalation and every capability dropped", m.Metadata.Name, c.Name, sc)
			}
			for _, r := range []string{"cpu", "memory"} {
				if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
					t.Errorf("%s/%s: no %s request and limit", m.Metadata.Name, c.Name, r)
				}
			}
			if m.Kind == "Deployment" {
				// Each service is itself on the bus, and nothing else.
				var keys []string
				for _, e := range c.Env {
					if e.ValueFrom.SecretKeyRef.Name == natsSecret {
						keys = append(keys, e.Name+"="+e.ValueFrom.SecretKeyRef.Key)
					}
				}
				want := busauth.EnvPassword + "=" + busauth.PasswordVar(busauth.Role(m.Metadata.Name))
				if !slices.Equal(keys, []string{want}) {
					t.Errorf("%s/%s: bus identity from %s is %v, want only %s", m.Metadata.Name, c.Name, natsSecret, keys, want)
				}
				// And it holds the bus token keys it needs, and no other.
				var tokenKeys []string
				for _, e := range c.Env {
					if ref := e.ValueFrom.SecretKeyRef; ref.Name == busKeysSecret {
						if ref.Key != e.Name {
							t.Errorf("%s/%s: %s from key %s of %s", m.Metadata.Name, c.Name, e.Name, ref.Key, busKeysSecret)
						}
						tokenKeys = append(tokenKeys, e.Name)
					}
				}
				if need := tokenKeysOf[m.Metadata.Name].Vars(); !slices.Equal(tokenKeys, need) {
					t.Errorf("%s/%s: bus token keys %v from %s, want exactly %v", m.Metadata.Name, c.Name, tokenKeys, busKeysSecret, need)
				}
			}
			if m.Metadata.Name == "engine-worker" {
				for _, e := range c.EnvFrom {
					if e.SecretRef != nil && strings.Contains(e.SecretRef.Name, "db") {
						t.Errorf("the engine worker gets the database secret %q", e.SecretRef.Name)
					}
				}
			}
		}
	}
	var worker *manifest
	for i, p := range policies {
		if p.Spec.PodSelector.MatchLabels["app"] == "engine-worker" {
			worker = &policies[i]
		}
	}
	if worker == nil {
		t.Fatal("no NetworkPolicy for the engine worker")
	}
	for _, e := range worker.Spec.Egress {
		for _, port := range e.Ports {
			if port.Port == 5432 || port.Port == 8421 {
				t.Errorf("the engine worker's egress allows port %d", port.Port)
			}
		}
	}
}

// pinned says why image is not pinned to a version: no tag, or :latest.
func pinned(image string) error {
	if strings.Contains(image, "@sha256:") {
		return nil
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return errors.New("image " + image + " has no tag (it means :latest)")
	}
	if image[i+1:] == "latest" {
		return errors.New("image " + image + " is :latest, not a version")
	}
	return nil
}

// The compose file and the Dockerfiles pin every image they pull, and the
// worker and bridge images carry a current Node.js LTS line.
func TestImagesArePinned(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct{ Image string }
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	images := 0
	for name, s := range compose.Services {
		if s.Image == "" {
			continue // built from the tree
		}
		images++
		if err := pinned(s.Image); err != nil {
			t.Errorf("docker-compose.yml %s: %v", name, err)
		}
	}
	if images < 4 {
		t.Errorf("docker-compose.yml pulls %d images, want NATS, Postgres and the observability stack", images)
	}
	from := regexp.MustCompile(`(?m)^FROM\s+(\S+)`)
	arg := regexp.MustCompile(`(?m)^ARG\s+(\w+)=(\S+)`)
	for _, f := range []string{"Dockerfile", "Dockerfile.worker", "Dockerfile.mcp-bridge"} {
		b, err := os.ReadFile("../../deploy/docker/" + f)
		if err != nil {
			t.Fatal(err)
		}
		args := map[string]string{}
		for _, m := range arg.FindAllStringSubmatch(string(b), -1) {
			args[m[1]] = m[2]
		}
		node := ""
		for _, m := range from.FindAllStringSubmatch(string(b), -1) {
			image := os.Expand(m[1], func(k string) string { return args[k] })
			if err := pinned(image); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			if strings.HasPrefix(image, "node:") {
				node = image
			}
		}
		if f == "Dockerfile" {
			continue
		}
		if !regexp.MustCompile(`^node:(22|24)[.-]`).MatchString(node) {
			t.Errorf("%s runs on %q, want a current Node.js LTS line (22 or 24)", f, node)
		}
	}
}
