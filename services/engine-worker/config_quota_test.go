package worker

import "testing"

func TestWorkspaceQuotaFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(func(k string) string {
		return map[string]string{"CLOPEN_WORKSPACE_QUOTA": "1GiB"}[k]
	})
	if err != nil || cfg.WorkspaceQuota != 1<<30 {
		t.Errorf("CLOPEN_WORKSPACE_QUOTA=1GiB gives %d, %v", cfg.WorkspaceQuota, err)
	}
	if _, err := ConfigFromEnv(func(k string) string {
		return map[string]string{"CLOPEN_WORKSPACE_QUOTA": "lots"}[k]
	}); err == nil {
		t.Error("CLOPEN_WORKSPACE_QUOTA=lots was taken")
	}
}

func TestSwitchesFromEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil || cfg.GitAllowLocal || cfg.MetricsWithoutTenant || cfg.GitCAFile != "" {
		t.Errorf("defaults = %+v, %v; want local git off, tenant metrics on", cfg, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{"CLOPEN_GIT_ALLOW_LOCAL": "on", "CLOPEN_METRICS_TENANT": "off", "CLOPEN_GIT_CA_FILE": "/ca.pem"}))
	if err != nil || !cfg.GitAllowLocal || !cfg.MetricsWithoutTenant || cfg.GitCAFile != "/ca.pem" {
		t.Errorf("switched = %+v, %v", cfg, err)
	}
	for _, name := range []string{"CLOPEN_GIT_ALLOW_LOCAL", "CLOPEN_METRICS_TENANT"} {
		if _, err := ConfigFromEnv(env(map[string]string{name: "yes"})); err == nil {
			t.Errorf("%s=yes was taken", name)
		}
	}
}
