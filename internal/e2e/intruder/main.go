// Command intruder is what a second local OS user tries against a
// durawait: every attack of its plan against every listening address, and
// reads of the data dir's files. The e2e tests run it as user nobody
// (TestASecondOSUserReachesNothing); it prints one JSON line per attempt,
// whose "got" field says whether the attempt got what it asked for.
//
// Usage: intruder PLAN, PLAN a JSON object:
//
//	{"addrs": ["127.0.0.1:7233", ...], "workflow": "wait_for/…", "files": ["/data/…", ...],
//	 "hooks": ["127.0.0.1:8080", ...], "hook_names": ["ci-done", ...]}
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// plan is what to attack.
type plan struct {
	// Addrs are listening addresses (HOST:PORT).
	Addrs []string `json:"addrs"`
	// Workflow is a running wait's workflow ID, to read, signal and
	// cancel.
	Workflow string `json:"workflow"`
	// Files are paths in the data dir to read (or list, for a folder).
	Files []string `json:"files"`
	// Controls are paths the intruder can read (the data dir's parent):
	// reading them proves the reads of Files reached the data dir.
	Controls []string `json:"controls"`
	// Hooks are addresses whose /hooks/{name} the intruder posts to with
	// forged signatures (each of HookNames, a GitHub and a GitLab forgery):
	// every listener, the MCP port of a serve without [auth] too, since a
	// signed hook holds its secret whoever may call /mcp.
	Hooks     []string `json:"hooks"`
	HookNames []string `json:"hook_names"`
}

// attempt is one attack's outcome.
type attempt struct {
	Target string `json:"target"`
	Attack string `json:"attack"`
	// Got says the attack got what it asked for (a breach).
	Got    bool   `json:"got"`
	Detail string `json:"detail"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: intruder PLAN")
		os.Exit(2)
	}
	var p plan
	if err := json.Unmarshal([]byte(os.Args[1]), &p); err != nil {
		fmt.Fprintln(os.Stderr, "intruder: plan:", err)
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	report := func(a attempt) { _ = out.Encode(a) }
	for _, addr := range p.Addrs {
		for _, a := range grpcAttacks(addr, p.Workflow) {
			report(a)
		}
		for _, a := range httpAttacks(addr) {
			report(a)
		}
	}
	for _, addr := range p.Hooks {
		for _, a := range hookForgeries(addr, p.HookNames) {
			report(a)
		}
	}
	for _, f := range p.Files {
		report(readFile(f))
	}
	for _, f := range p.Controls {
		a := readFile(f)
		a.Attack = "read (control)"
		report(a)
	}
}

// transports are the ways a client without a certificate connects: plain
// gRPC, and TLS that trusts any server (the intruder has no CA).
func transports() map[string]credentials.TransportCredentials {
	return map[string]credentials.TransportCredentials{
		"plain gRPC":                 insecure.NewCredentials(),
		"TLS, no client certificate": credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}), //nolint:gosec // the intruder trusts anything
	}
}

// grpcAttacks are the Temporal frontend's calls an intruder wants: list
// and read every wait, start a workflow of durawait's (a re-exposed
// downstream call, on durawait's task queue), signal and cancel a wait.
func grpcAttacks(addr, workflowID string) []attempt {
	var out []attempt
	for name, creds := range transports() {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			out = append(out, attempt{Target: addr, Attack: name + " connect", Detail: err.Error()})
			continue
		}
		svc := workflowservice.NewWorkflowServiceClient(conn)
		run := func(attack string, call func(ctx context.Context) error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := call(ctx)
			a := attempt{Target: addr, Attack: name + ": " + attack, Got: err == nil}
			if err != nil {
				a.Detail = err.Error()
			}
			out = append(out, a)
		}
		exec := &commonpb.WorkflowExecution{WorkflowId: workflowID}
		run("list waits", func(ctx context.Context) error {
			_, err := svc.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default"})
			return err
		})
		run("read a wait's history", func(ctx context.Context) error {
			_, err := svc.GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{Namespace: "default", Execution: exec})
			return err
		})
		run("start a downstream call", func(ctx context.Context) error {
			_, err := svc.StartWorkflowExecution(ctx, &workflowservice.StartWorkflowExecutionRequest{
				Namespace: "default", WorkflowId: "intruder-" + name, RequestId: "intruder-" + name,
				WorkflowType: &commonpb.WorkflowType{Name: "CallDownstreamTool"},
				TaskQueue:    &taskqueuepb.TaskQueue{Name: "durawait"},
			})
			return err
		})
		run("signal a wait", func(ctx context.Context) error {
			_, err := svc.SignalWorkflowExecution(ctx, &workflowservice.SignalWorkflowExecutionRequest{
				Namespace: "default", WorkflowExecution: exec, SignalName: "intruder"})
			return err
		})
		run("cancel a wait", func(ctx context.Context) error {
			_, err := svc.RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
				Namespace: "default", WorkflowExecution: exec})
			return err
		})
		conn.Close()
	}
	return out
}

// httpAttacks are the HTTP requests an intruder (or a DNS-rebound page,
// whose requests name its own host) sends, over HTTP and HTTPS: the Web
// UI's API (list, start a workflow), an unsigned hook post and an MCP
// initialize.
func httpAttacks(addr string) []attempt {
	var out []attempt
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // the intruder trusts anything
	}}
	for _, target := range []string{"http://" + addr, "https://" + addr, "http://evil.example", "https://evil.example"} {
		scheme, host, _ := strings.Cut(target, "://")
		for _, r := range []struct {
			attack, method, path, body string
			breach                     func(code int, body string) bool
		}{
			{"Web UI API: list waits", http.MethodGet, "/api/v1/namespaces/default/workflows", "",
				func(code int, body string) bool { return code == http.StatusOK && strings.Contains(body, "executions") }},
			{"Web UI API: start a workflow", http.MethodPost, "/api/v1/namespaces/default/workflows/intruder-ui",
				`{"workflowType":{"name":"CallDownstreamTool"},"taskQueue":{"name":"durawait"}}`,
				func(code int, _ string) bool { return code/100 == 2 }},
			{"hook: post unsigned, with a made-up token", http.MethodPost, "/hooks/ci-done", `{"forged":true}`,
				func(code int, _ string) bool { return code/100 == 2 }},
			{"MCP: initialize", http.MethodPost, "/mcp",
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"intruder","version":"1"}}}`,
				func(code int, body string) bool {
					return code == http.StatusOK && strings.Contains(body, `"serverInfo"`)
				}},
		} {
			req, err := http.NewRequest(r.method, scheme+"://"+addr+r.path, bytes.NewBufferString(r.body))
			if err != nil {
				continue
			}
			req.Host = host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			// A token of its own, so that a server that skips its CSRF
			// check for authorized requests lets the call reach the engine.
			req.Header.Set("Authorization", "Bearer intruder")
			a := attempt{Target: addr, Attack: r.attack + " (" + scheme + ", Host " + host + ")"}
			resp, err := hc.Do(req)
			if err != nil {
				a.Detail = err.Error()
				out = append(out, a)
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			a.Got = r.breach(resp.StatusCode, string(body))
			a.Detail = fmt.Sprintf("%d %s", resp.StatusCode, strings.Join(strings.Fields(string(body)), " "))
			if len(a.Detail) > 200 {
				a.Detail = a.Detail[:200]
			}
			out = append(out, a)
		}
	}
	return out
}

// hookForgeries post to each named hook at addr as a CI system would, with
// a signature the intruder made up: GitHub's HMAC header (over a key it
// guessed) and GitLab's token header. A 2xx is a breach: the post was
// kept.
func hookForgeries(addr string, names []string) []attempt {
	var out []attempt
	hc := &http.Client{Timeout: 5 * time.Second}
	body := []byte(`{"workflow_run":{"conclusion":"success"},"forged":true}`)
	mac := hmac.New(sha256.New, []byte("guessed-secret"))
	mac.Write(body)
	forgeries := []struct{ attack, header, value string }{
		{"hook: post with a forged GitHub signature", "X-Hub-Signature-256", "sha256=" + hex.EncodeToString(mac.Sum(nil))},
		{"hook: post with a guessed GitLab token", "X-Gitlab-Token", "guessed-secret"},
	}
	for _, name := range names {
		for _, f := range forgeries {
			a := attempt{Target: addr, Attack: f.attack + " (" + name + ")"}
			req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/"+name, bytes.NewReader(body))
			if err != nil {
				a.Detail = err.Error()
				out = append(out, a)
				continue
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(f.header, f.value)
			resp, err := hc.Do(req)
			if err != nil {
				a.Detail = err.Error()
				out = append(out, a)
				continue
			}
			reply, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			a.Got = resp.StatusCode/100 == 2
			a.Detail = fmt.Sprintf("%d %s", resp.StatusCode, strings.Join(strings.Fields(string(reply)), " "))
			out = append(out, a)
		}
	}
	return out
}

// readFile reads a file (or lists a folder) of the data dir.
func readFile(path string) attempt {
	a := attempt{Target: path, Attack: "read"}
	info, err := os.Stat(path)
	if err == nil && info.IsDir() {
		_, err = os.ReadDir(path)
	} else if err == nil {
		_, err = os.ReadFile(path)
	}
	a.Got = err == nil
	if err != nil {
		a.Detail = err.Error()
	}
	return a
}
