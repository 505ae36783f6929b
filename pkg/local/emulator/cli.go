package emulator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// AWSCLI returns the aws CLI: the one on PATH or, behind a pyenv shim, the
// script the shim resolves to (the shim doubles every call's start-up;
// tenant.sh makes a dozen). It returns an error saying how to install the
// CLI when none is on PATH.
func AWSCLI() (string, error) {
	bin, err := exec.LookPath("aws")
	if err != nil {
		return "", errors.New("the aws CLI is not on PATH: install it with `pipx install awscli` (or pip); `scripts/prerequisites.sh aws` checks it")
	}
	if out, err := exec.Command("pyenv", "which", "aws").Output(); err == nil {
		bin = strings.TrimSpace(string(out))
	}
	return bin, nil
}

// CLIEnv returns the environment of a command that runs awsBin (AWSCLI),
// itself or from a script, against moto at endpoint: the current
// environment, the endpoint, the emulators' fake credentials and region,
// awsBin's folder first on PATH, then extra.
func CLIEnv(endpoint, awsBin string, extra ...string) []string {
	return append(os.Environ(), append([]string{
		"AWS_ENDPOINT_URL=" + endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_DEFAULT_REGION=" + Region, "AWS_REGION=" + Region,
		"PATH=" + filepath.Dir(awsBin) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}, extra...)...)
}
