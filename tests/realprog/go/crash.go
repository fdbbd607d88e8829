// SPDX-License-Identifier: MIT
// A Go program with cgo for tests/realprog/test_go.py (docs/preload.md, "Go"). Usage:
//   crash cgo       a fault in C code called through cgo (a NULL read two calls down)
//   crash gopanic   a nil pointer read in Go code, not recovered
//   crash recover   three nil pointer reads in Go code, each recovered; exits 0
//   crash notify    waits (os/signal) for the highest real-time signal, which the test sends
//   crash unlock    unlocks an unlocked sync.Mutex: a fatal error Go raises on its system stack
// Each first starts four goroutines that sleep, and says "ready" on stdout.
package main

/*
__attribute__((noinline)) static int c_fault(volatile int *p) { return *p + 1; }
__attribute__((noinline)) static int c_middle(volatile int *p) { return c_fault(p) * 2; }
static int c_entry(long where) { return c_middle((volatile int *)where); }
*/
import "C"

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

//go:noinline
func goCaller(where int) int {
	return int(C.c_entry(C.long(where)))
}

//go:noinline
func goUnlock(mu *sync.Mutex) {
	mu.Unlock()
}

//go:noinline
func goFault(p *int) int {
	return *p + 1
}

func recovered(p *int) (ok bool) {
	defer func() { ok = recover() != nil }()
	goFault(p)
	return false
}

func main() {
	what := ""
	if len(os.Args) > 1 {
		what = os.Args[1]
	}
	for i := 0; i < 4; i++ {
		go func() {
			for {
				time.Sleep(time.Millisecond)
			}
		}()
	}
	var ch chan os.Signal
	if what == "notify" {
		ch = make(chan os.Signal, 1)
		signal.Notify(ch, syscall.Signal(64))
	}
	fmt.Println("ready")
	switch what {
	case "cgo":
		fmt.Println(goCaller(0))
	case "gopanic":
		fmt.Println(goFault(nil))
	case "recover":
		n := 0
		for i := 0; i < 3; i++ {
			if recovered(nil) {
				n++
			}
		}
		fmt.Println("recovered", n)
	case "unlock":
		var mu sync.Mutex
		goUnlock(&mu)
	case "notify":
		select {
		case s := <-ch:
			fmt.Println("got", s)
		case <-time.After(60 * time.Second):
			fmt.Println("timed out")
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: crash cgo|gopanic|recover|notify|unlock")
		os.Exit(2)
	}
}
