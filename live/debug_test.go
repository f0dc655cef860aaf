package live

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

func TestDebugLive(t *testing.T) {
	sc, err := scenarios.Load(os.Getenv("ID"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{Seed: 1, Log: func(s string) { fmt.Println(s) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range res.History.Intervals {
		fmt.Printf("%+v\n", i)
	}
	for _, i := range res.History.Wants {
		fmt.Printf("%+v\n", i)
	}
	fmt.Printf("%+v %+v\n", res.Report.Verdict, res.Report.Witness)
}
