// Command hostprog is a program built with `go build` that hosts synctest
// bubbles through bubblehost.Main; TestHostedProgram runs it (see the
// package comment of bubblehost for why this is worth a test of its own).
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/locklab/locklab/sim/bubblehost"
)

func main() { bubblehost.Main(realMain) }

func realMain() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hostprog sleep|panic|deadlock|leak|gopanic|mainpanic|exit [args...]")
		return 2
	}
	// The program's own arguments reach it whole, flags of testing's
	// name included.
	fmt.Printf("args %q\n", os.Args[1:])
	switch os.Args[1] {
	case "sleep":
		for i := 1; i <= 2; i++ {
			var slept time.Duration
			err := bubblehost.Run(func() {
				start := time.Now()
				done := make(chan bool)
				go func() { time.Sleep(30 * time.Minute); done <- true }()
				time.Sleep(time.Hour)
				<-done
				slept = time.Since(start)
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "hostprog:", err)
				return 1
			}
			fmt.Printf("run %d slept %v\n", i, slept)
		}
		return 0
	case "panic":
		return report(bubblehost.Run(func() { panic("boom in the bubble") }))
	case "deadlock":
		return report(bubblehost.Run(func() { <-make(chan int) }))
	case "leak":
		return report(bubblehost.Run(func() { go func() { select {} }() }))
	case "gopanic":
		return report(bubblehost.Run(func() {
			done := make(chan bool)
			go func() { panic("boom in a goroutine of the bubble") }()
			<-done
		}))
	case "mainpanic":
		panic("boom in main")
	case "exit":
		return 3
	}
	fmt.Fprintf(os.Stderr, "hostprog: unknown mode %q\n", os.Args[1])
	return 2
}

// report prints a failed run's error on stderr; after one, a second run
// must still work.
func report(err error) int {
	if err == nil {
		fmt.Println("no error")
		return 0
	}
	fmt.Fprintln(os.Stderr, "hostprog:", err)
	if err := bubblehost.Run(func() { time.Sleep(time.Second) }); err != nil {
		fmt.Fprintln(os.Stderr, "hostprog: the next run failed too:", err)
		return 4
	}
	return 1
}
