package devstack

import (
	"strings"
	"testing"
)

func TestEnvOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want Options
	}{
		{"defaults", nil, Options{Addr: "127.0.0.1:3000", TargetAddr: "127.0.0.1:3001", TenantsFile: "events/tenants.json", MotoPort: 4566,
			DynamoDBLocalDir: ".cache/dynamodb-local", DynamoDBLocalPort: 8000, Host: "127.0.0.1", LogFile: DefaultLogFile}},
		{"make variables", map[string]string{"ADDR": ":4000", "TARGET_ADDR": ":4001", "TENANTS_FILE": "t.json", "MOTO_PORT": "5000",
			"DYNAMODB_LOCAL_DIR": "/ddb", "DYNAMODB_PORT": "9000", "EMULATOR_HOST": "0.0.0.0", "AWS_ENDPOINT_URL": "http://moto:5000", "LOG_FILE": "/tmp/f.log"},
			Options{Addr: ":4000", TargetAddr: ":4001", TenantsFile: "t.json", MotoPort: 5000,
				DynamoDBLocalDir: "/ddb", DynamoDBLocalPort: 9000, Host: "0.0.0.0", Endpoint: "http://moto:5000", LogFile: "/tmp/f.log"}},
		{"ports that are no numbers keep the defaults", map[string]string{"MOTO_PORT": "x", "DYNAMODB_PORT": "8000a"},
			Options{Addr: "127.0.0.1:3000", TargetAddr: "127.0.0.1:3001", TenantsFile: "events/tenants.json", MotoPort: 4566,
				DynamoDBLocalDir: ".cache/dynamodb-local", DynamoDBLocalPort: 8000, Host: "127.0.0.1", LogFile: DefaultLogFile}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"ADDR", "TARGET_ADDR", "TENANTS_FILE", "MOTO_PORT", "DYNAMODB_LOCAL_DIR", "DYNAMODB_PORT", "EMULATOR_HOST", "AWS_ENDPOINT_URL", "LOG_FILE"} {
				t.Setenv(k, tt.env[k])
			}
			if got := EnvOptions(); got != tt.want {
				t.Errorf("EnvOptions() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadTenant(t *testing.T) {
	const file = "../../../events/tenants.json"
	if ft, err := LoadTenant(file, "demo"); err != nil || len(ft.Providers) == 0 {
		t.Errorf("LoadTenant(%q, demo) = %d providers, %v; want the demo tenant", file, len(ft.Providers), err)
	}
	if _, err := LoadTenant(file, "nobody"); err == nil || !strings.Contains(err.Error(), `no tenant "nobody"`) {
		t.Errorf("LoadTenant(%q, nobody) = %v, want no tenant \"nobody\"", file, err)
	}
}
