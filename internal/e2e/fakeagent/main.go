// Command fakeagent stands in for an agent CLI in durawait's tests: it
// replays a recorded output stream with controlled timing.
//
//	fakeagent --scripts DIR [--argv-log FILE] [--end-log FILE] [--resume ID] [--model M] NAME [words...]
//
// --end-log records how each run ended, one line "NAME exit CODE" or "NAME
// signal SIGNAL" (SIGTERM, SIGINT or SIGHUP, by Go's name, e.g.
// "terminated": recorded, then the run dies of that signal as it would
// have without the record; a SIGKILL leaves no line), so a test can tell a
// CLI that finished from one that was killed.
//
// It plays DIR/NAME.script line by line. A line is printed as it is (with
// {session} replaced by the --resume ID, or "sess-new"), except directives:
//
//	@sleep DURATION      pause
//	@wait FILE           block until DIR/FILE exists
//	@bigtext N           a Claude assistant line whose text is N "x" then "END"
//	@stderr TEXT         write TEXT to stderr
//	@child               start a child process in the same process group and
//	                     write its pid to DIR/NAME.child.pid
//	@ignore-term         ignore SIGTERM from now on
//	@exit CODE           exit at once with CODE
//
// At the end of the script it exits 0.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	scripts := flag.String("scripts", "", "folder of the scripts")
	argvLog := flag.String("argv-log", "", "append this run's arguments to this file")
	endLog := flag.String("end-log", "", "append how this run ended to this file")
	resume := flag.String("resume", "", "session to resume")
	_ = flag.String("model", "", "model name")
	flag.Parse()
	if *argvLog != "" {
		if f, err := os.OpenFile(*argvLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(os.Args[1:], " "))
			f.Close()
		}
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "fakeagent: no script named")
		os.Exit(2)
	}
	name := strings.Fields(flag.Arg(0))[0]
	ended := recordEnd(*endLog, name)
	session := "sess-new"
	if *resume != "" {
		session = *resume
	}
	f, err := os.Open(filepath.Join(*scripts, name+".script"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(2)
	}
	defer f.Close()
	out := bufio.NewWriter(os.Stdout)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		directive, arg, _ := strings.Cut(line, " ")
		switch directive {
		case "@sleep":
			d, _ := time.ParseDuration(arg)
			time.Sleep(d)
		case "@wait":
			for {
				if _, err := os.Stat(filepath.Join(*scripts, arg)); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "@bigtext":
			n, _ := strconv.Atoi(arg)
			fmt.Fprintf(out, `{"type":"assistant","session_id":%q,"message":{"content":[{"type":"text","text":"%sEND"}]}}`+"\n", session, strings.Repeat("x", n))
		case "@stderr":
			fmt.Fprintln(os.Stderr, arg)
		case "@child":
			child := exec.Command("sleep", "1000")
			if err := child.Start(); err == nil {
				_ = os.WriteFile(filepath.Join(*scripts, name+".child.pid"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
			}
		case "@ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "@exit":
			out.Flush()
			code, _ := strconv.Atoi(arg)
			ended("exit " + strconv.Itoa(code))
			os.Exit(code)
		default:
			fmt.Fprintln(out, strings.ReplaceAll(line, "{session}", session))
		}
		out.Flush()
	}
	ended("exit 0")
}

// recordEnd returns the function that appends "name how" to the end log
// (none when path is empty), and records a run killed by SIGTERM, SIGINT or
// SIGHUP there before letting the signal kill it.
func recordEnd(path, name string) func(how string) {
	if path == "" {
		return func(string) {}
	}
	record := func(how string) {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, name, how)
			f.Close()
		}
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		sig := <-signals
		record("signal " + sig.String())
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()
	return record
}
