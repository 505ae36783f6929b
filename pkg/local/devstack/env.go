package devstack

import (
	"os"
	"strconv"
)

// EnvOptions returns the Options that make run's variables set (ADDR,
// TARGET_ADDR, TENANTS_FILE, MOTO_PORT, DYNAMODB_LOCAL_DIR, DYNAMODB_PORT,
// EMULATOR_HOST, AWS_ENDPOINT_URL, LOG_FILE), with make run's defaults for those unset.
func EnvOptions() Options {
	return Options{
		Addr:              Getenv("ADDR", "127.0.0.1:3000"),
		TargetAddr:        Getenv("TARGET_ADDR", DefaultTargetAddr),
		TenantsFile:       Getenv("TENANTS_FILE", "events/tenants.json"),
		MotoPort:          GetenvInt("MOTO_PORT", 4566),
		DynamoDBLocalDir:  Getenv("DYNAMODB_LOCAL_DIR", ".cache/dynamodb-local"),
		DynamoDBLocalPort: GetenvInt("DYNAMODB_PORT", 8000),
		Host:              Getenv("EMULATOR_HOST", "127.0.0.1"),
		Endpoint:          os.Getenv("AWS_ENDPOINT_URL"),
		LogFile:           Getenv("LOG_FILE", DefaultLogFile),
	}
}

// DefaultLogFile is where `make run` writes the functions' JSON lines and
// `make inspect` searches them (LOG_FILE).
const DefaultLogFile = ".cache/run/functions.log"

// Getenv returns the variable's value, or def when it is unset or empty.
func Getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// GetenvInt returns the variable's value, or def when it is not an integer.
func GetenvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
