// Package emulator starts the local AWS emulators this project runs on
// (moto server and AWS's DynamoDB Local) as child processes on free
// loopback ports. Children get a parent-death signal, so they never outlive
// the program (a test binary or `make run`) that started them.
package emulator

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Process is a running emulator.
type Process struct {
	Name     string
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
	// conn, for a server a zygote forked (ForkMoto), is what keeps it
	// alive: it exits when conn closes; pid is its process id.
	conn net.Conn
	pid  int
}

// PID returns the emulator's process id (0 when unknown).
func (p *Process) PID() int {
	switch {
	case p.conn != nil:
		return p.pid
	case p.cmd != nil && p.cmd.Process != nil:
		return p.cmd.Process.Pid
	}
	return 0
}

// motoServer is moto_server with AWS's FIFO receive semantics; see
// StartMoto.
//
//go:embed moto_server.py
var motoServer string

// StartMoto starts moto server on port (0 picks a free one), with its SQS
// FIFO receive corrected to AWS's documented semantics (moto 5.2.1 hands out
// a later message of a group first when several in-flight ones become
// visible together, and lets concurrent receives race): a group yields
// nothing while any message of it is in flight, then yields from its head,
// in order; a message moves to its DLQ after maxReceiveCount receives (a
// FIFO one with its MessageId as deduplication id, as AWS does); FIFO
// SequenceNumbers increase in queue order, as AWS's do within a group; and
// StartMessageMoveTask (DLQ redrive, missing from moto 5.2.1) moves a DLQ's
// messages back as new messages, completing before it answers. It
// runs moto_server's own Python interpreter with the launcher in
// moto_server.py, so every user of this package — make run, the tests,
// make chaos — gets the same SQS.
func StartMoto(ctx context.Context, port int) (*Process, error) {
	return StartMotoOn(ctx, "127.0.0.1", port)
}

// Moto returns endpoint when it is set (a moto server already running),
// else starts one on a free port (StartMoto) and returns its endpoint. stop
// ends what Moto started, and nothing else.
func Moto(ctx context.Context, endpoint string) (_ string, stop func(), _ error) {
	if endpoint != "" {
		return endpoint, func() {}, nil
	}
	p, err := StartMoto(ctx, 0)
	if err != nil {
		return "", nil, err
	}
	return p.Endpoint, p.Stop, nil
}

// DynamoDBLocal is Moto for DynamoDB Local from dir (StartDynamoDBLocal).
func DynamoDBLocal(ctx context.Context, endpoint, dir string) (_ string, stop func(), _ error) {
	if endpoint != "" {
		return endpoint, func() {}, nil
	}
	p, err := StartDynamoDBLocal(ctx, dir, 0)
	if err != nil {
		return "", nil, err
	}
	return p.Endpoint, p.Stop, nil
}

// StartMotoOn is StartMoto bound to host (e.g. 0.0.0.0 so that a container
// can reach it); the Process's Endpoint stays on loopback.
func StartMotoOn(ctx context.Context, host string, port int) (*Process, error) {
	python, err := motoPython()
	if err != nil {
		return nil, err
	}
	return start(ctx, "moto", port, "/moto-api/", func(p int) []string {
		return []string{python, "-c", motoServer, "-H", host, "-p", fmt.Sprint(p)}
	})
}

// StartMotoZygote starts a moto launcher that imports the services the
// project calls, then forks a warm moto server (StartMoto's) for each
// ForkMoto on the Unix socket path socket. A cold start costs about 2 s of
// CPU (SSM's models import EC2's); a fork, almost none: make test's
// scripts/testenv runs one for the test binaries' servers. The forked
// servers share the zygote's process group, so Stop ends them too.
func StartMotoZygote(ctx context.Context, socket string) (*Process, error) {
	python, err := motoPython()
	if err != nil {
		return nil, err
	}
	p, logf, err := spawn("moto zygote", []string{python, "-c", motoServer, "--zygote", socket})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("moto zygote exited at start: %s", strings.TrimSpace(string(out)))
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		default:
		}
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			return p, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("moto zygote did not listen on %s within %s", socket, startTimeout)
}

// ForkMoto returns a moto server forked by the zygote listening on socket
// (StartMotoZygote), on a free loopback port, at the caller's nice value;
// Stop ends it, and so does the caller's exit.
func ForkMoto(ctx context.Context, socket string) (*Process, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("moto zygote at %s: %w", socket, err)
	}
	p := &Process{Name: "moto", Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), conn: conn}
	_ = conn.SetDeadline(time.Now().Add(startTimeout))
	// The server runs at the caller's nice value, as a child would: make
	// test runs most test binaries under nice, and a server at a higher
	// priority than its client starves the client's deadlines.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		prio = 20
	}
	if _, err := fmt.Fprintf(conn, "127.0.0.1 %d %d\n", port, 20-prio); err != nil {
		conn.Close()
		return nil, fmt.Errorf("moto zygote at %s: %w", socket, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "ok %d\n", &p.pid); err != nil || serr != nil {
		conn.Close()
		return nil, fmt.Errorf("moto zygote at %s forked no server (%q): %v", socket, line, errors.Join(err, serr))
	}
	_ = conn.SetDeadline(time.Time{})
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := http.Get(p.Endpoint + "/moto-api/"); err == nil {
			resp.Body.Close()
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("forked moto did not answer on %s within %s", p.Endpoint, startTimeout)
}

// Python returns the Python interpreter moto_server runs on, whose moto
// package helpers (the rehearsal's IAM evaluation) can import.
func Python() (string, error) { return motoPython() }

// motoPython returns the interpreter of the moto_server on PATH: the
// shebang of its Python entry-point script (behind a pyenv shim, the
// script pyenv resolves it to: the shim costs seconds per start), python3
// otherwise.
func motoPython() (string, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return "", errors.New("moto_server is not on PATH: pipx install 'moto[server]==5.2.1' (scripts/prerequisites.sh lists every prerequisite)")
	}
	if py, ok := shebangPython(bin); ok {
		return py, nil
	}
	if out, err := exec.Command("pyenv", "which", "moto_server").Output(); err == nil {
		if py, ok := shebangPython(strings.TrimSpace(string(out))); ok {
			return py, nil
		}
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("moto_server at %s: no python3 on PATH to run it with", bin)
	}
	return py, nil
}

// shebangPython returns the interpreter of a "#!/path/to/python" script.
func shebangPython(script string) (string, bool) {
	f, err := os.Open(script)
	if err != nil {
		return "", false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	py, ok := strings.CutPrefix(strings.TrimSpace(line), "#!")
	if !ok || !strings.Contains(filepath.Base(py), "python") || strings.Contains(py, " ") {
		return "", false
	}
	return py, true
}

// StartDynamoDBLocal starts DynamoDB Local from dir (holding
// DynamoDBLocal.jar and DynamoDBLocal_lib) on port (0 picks a free one),
// listening on every interface as DynamoDB Local does. It runs with
// -sharedDb: one database whatever the caller's access key and region, so a
// function under `sam local invoke` (which passes your own or placeholder
// credentials) sees the tables `make run` created.
func StartDynamoDBLocal(ctx context.Context, dir string, port int) (*Process, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the process runs in the temp dir
	}
	jar := filepath.Join(dir, "DynamoDBLocal.jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("%s missing: run scripts/install-dynamodb-local.sh", jar)
	}
	return start(ctx, "DynamoDB Local", port, "/", func(p int) []string {
		// C1 only and the serial collector: an emulator's JVM lives for a
		// test run or a `make run`, where C2's compilations and G1's
		// threads cost more CPU than they win back (start-up: 3.3 s of CPU
		// on 2 cores, 5.1 s with the defaults).
		return []string{"java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.library.path=" + filepath.Join(dir, "DynamoDBLocal_lib"),
			"-jar", jar, "-inMemory", "-sharedDb", "-port", fmt.Sprint(p), "-disableTelemetry"}
	})
}

// startTimeout bounds an emulator's start-up. A JVM starting DynamoDB Local
// on a loaded 2-core machine (parallel test packages each start their own)
// has been seen to need over a minute.
const startTimeout = 3 * time.Minute

// start launches argv from a goroutine locked to its OS thread, which stays
// alive until the process exits: Linux sends the parent-death signal when
// the spawning thread exits, not the process.
func start(ctx context.Context, name string, port int, probe string, argv func(int) []string) (*Process, error) {
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	} else if err := portFree(port); err != nil {
		return nil, fmt.Errorf("%s: port %d is in use (is another `make run` running?): %w", name, port, err)
	}
	p, logf, err := spawn(name, argv(port))
	if err != nil {
		return nil, err
	}
	p.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("%s exited at start: %s", name, strings.TrimSpace(string(out)))
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		default:
		}
		if resp, err := http.Get(p.Endpoint + probe); err == nil {
			resp.Body.Close()
			return p, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Stop()
	out, _ := os.ReadFile(logf.Name())
	return nil, fmt.Errorf("%s did not answer on %s within %s: %s", name, p.Endpoint, startTimeout, strings.TrimSpace(string(out)))
}

// spawn starts args as the emulator name, its output to a temporary log.
func spawn(name string, args []string) (*Process, *os.File, error) {
	logf, err := os.CreateTemp("", "hookpack-emulator-*.log")
	if err != nil {
		return nil, nil, err
	}
	p := &Process{Name: name, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Dir = os.TempDir() // DynamoDB Local drops metadata files in its working directory
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.cmd = cmd
		started <- nil
		_ = cmd.Wait()
		close(p.done)
		select {} // never exit this thread: see above
	}()
	if err := <-started; err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, logf, nil
}

// Stop kills the emulator's process group and waits for it to exit (a
// forked moto: closes its connection, and waits for its port to close).
func (p *Process) Stop() {
	if p != nil && p.conn != nil {
		p.conn.Close()
		addr := strings.TrimPrefix(p.Endpoint, "http://")
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			c.Close()
		}
		return
	}
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// FreePorts returns n loopback ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	return l.Close()
}
