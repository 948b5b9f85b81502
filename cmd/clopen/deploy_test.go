package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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
			sc := c.SecurityContext
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
				t.Errorf("%s/%s: securityContext %+v, want no privilege escalation and every capability dropped", m.Metadata.Name, c.Name, sc)
			}
			for _, r := range []string{"cpu", "memory"} {
				if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
					t.Errorf("%s/%s: no %s request and limit", m.Metadata.Name, c.Name, r)
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
