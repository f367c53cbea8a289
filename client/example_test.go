package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/xfsq/xfsq/client"
)

// The Go client in ten lines, as docs/api.md shows it: ask admission before
// a run, and branch on a problem's status. It compiles with the package, so
// the page cannot drift from the client's API.
func Example() {
	c := client.New("http://127.0.0.1:9742", "TOKEN", nil)
	a, err := c.Admission(context.Background(), "omni", false)
	var p *client.ProblemError
	switch {
	case errors.As(err, &p) && p.Status == 404:
		log.Fatalf("no project omni: %s", p.Detail)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(a.Decision, a.Message) // ok|warn|deny, e.g. project "omni": ok (1.2 GiB of 50.0 GiB)
}
