package emulator_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// TestForkedMotosAreSeparateAndEndWithTheirConnection: each server the
// zygote forks (make test's per-binary moto) is a moto of its own, with the
// project's FIFO corrections, and exits when its Process stops, leaving
// the others and the zygote serving; stopping the zygote ends them all.
func TestForkedMotosAreSeparateAndEndWithTheirConnection(t *testing.T) {
	ctx := context.Background()
	socket, zygote := startZygote(t)
	a, err := emulator.ForkMoto(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	b, err := emulator.ForkMoto(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoint == b.Endpoint {
		t.Fatalf("two forks on one endpoint %s", a.Endpoint)
	}
	name := awstest.Name(t) + ".fifo"
	qa := sqs.NewFromConfig(awstest.Config(t, a.Endpoint))
	if _, err := qa.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
		t.Fatal(err)
	}
	out, err := qa.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(a.Endpoint + "/123456789012/" + name),
		MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
	if err != nil || len(aws.ToString(out.SequenceNumber)) != 20 {
		t.Fatalf("SendMessage() = %v, %v; want the corrected 20-digit SequenceNumber", out, err)
	}
	list, err := sqs.NewFromConfig(awstest.Config(t, b.Endpoint)).ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 0 {
		t.Fatalf("the other fork lists %v, %v; want no queue (separate servers)", list.QueueUrls, err)
	}
	a.Stop()
	if c, err := net.Dial("tcp", strings.TrimPrefix(a.Endpoint, "http://")); err == nil {
		c.Close()
		t.Errorf("stopped fork still listens on %s", a.Endpoint)
	}
	if _, err := sqs.NewFromConfig(awstest.Config(t, b.Endpoint)).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("the other fork after the first stopped: %v", err)
	}
	c, err := emulator.ForkMoto(ctx, socket)
	if err != nil {
		t.Fatalf("the zygote after a fork stopped: %v", err)
	}
	zygote.Stop()
	for _, p := range []*emulator.Process{b, c} {
		if conn, err := net.Dial("tcp", strings.TrimPrefix(p.Endpoint, "http://")); err == nil {
			conn.Close()
			t.Errorf("fork %s outlived the zygote's Stop", p.Endpoint)
		}
	}
}

// TestForkedMotoRunsAtTheCallersNiceValue: make test runs its test
// binaries under nice; a forked server must not outrank its client, as a
// server started as the client's child would not.
func TestForkedMotoRunsAtTheCallersNiceValue(t *testing.T) {
	ctx := context.Background()
	socket, _ := startZygote(t)
	// A nice value is a thread's: set and read on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	was := 20 - prio
	want := was + 3
	if want > 19 {
		want = was - 3
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, want); err != nil {
		t.Skipf("cannot renice the test: %v", err)
	}
	defer syscall.Setpriority(syscall.PRIO_PROCESS, 0, was)
	p, err := emulator.ForkMoto(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	if got, _ := strconv.Atoi(fields[16]); got != want {
		t.Errorf("forked moto's nice value = %d, want the caller's %d", got, want)
	}
}

// startZygote starts a zygote on a socket in t's temporary directory; it
// stops with t.
func startZygote(t *testing.T) (string, *emulator.Process) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "moto.sock")
	zygote, err := emulator.StartMotoZygote(context.Background(), socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zygote.Stop)
	return socket, zygote
}
