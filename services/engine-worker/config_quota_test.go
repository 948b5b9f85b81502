package worker

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "2GiB": 2 << 30, "512 MiB": 512 << 20, "8KiB": 8 << 10} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "2GB", "lots", "9999999999GiB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) took it", in)
		}
	}
	cfg, err := ConfigFromEnv(func(k string) string {
		return map[string]string{"CLOPEN_WORKSPACE_QUOTA": "1GiB"}[k]
	})
	if err != nil || cfg.WorkspaceQuota != 1<<30 {
		t.Errorf("CLOPEN_WORKSPACE_QUOTA=1GiB gives %d, %v", cfg.WorkspaceQuota, err)
	}
}
