package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	apiv1 "github.com/xfsq/xfsq/api/v1"
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

// fakeServer answers as xfsq serve would for the examples: a project
// "omni" over its soft limit, and 404 problems for any other.
func fakeServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/workspace/storage/projects/omni/admission":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"project":"omni","decision":"warn","message":"project \"omni\": over the soft disk limit (9 GiB of 8 GiB)",`+
				`"backend":{"kind":"xfs","enforced":true},"trees":[]}`)
		case "/v1/workspace/storage/projects":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"project":"omni","state":"ready","created_at":"2026-12-05T06:00:00Z","backend":{"kind":"xfs","enforced":true},"trees":[]}`)
		case "/v1/workspace/storage/report":
			// The trees at or over 90 % of their hard limit, fullest first.
			if q := r.URL.Query(); q.Get("over") != "90" || q.Get("sort") != "percent" || q.Get("check") != "1" {
				http.Error(w, "unexpected query "+r.URL.RawQuery, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"backend":{"kind":"xfs","enforced":true},"at_hard_limit":true,"check_failed":true,"warnings":[],"trees":[`+
				`{"project":"omni","area":"workspace","used_bytes":10737418240,"bytes_hard":10737418240,"percent":100},`+
				`{"project":"ci","area":"cache","used_bytes":9663676416,"bytes_hard":10737418240,"percent":90}]}`)
		default:
			w.Header().Set("Content-Type", apiv1.ProblemType)
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"type":"https://xfsq.dev/problems/not-found","title":"Not Found","status":404,"detail":"project \"nope\" not found"}`)
		}
	}))
}

// Ask before each run whether a project may start: a deny is an answer,
// not an error.
func ExampleClient_Admission() {
	srv := fakeServer()
	defer srv.Close()
	c := client.New(srv.URL, "reader-token", nil)
	a, err := c.Admission(context.Background(), "omni", false)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	switch a.Decision {
	case apiv1.DecisionDeny:
		fmt.Println("refused:", a.Message)
	case apiv1.DecisionWarn:
		fmt.Println("starting, but:", a.Message)
	default:
		fmt.Println("ok")
	}
	// Output: starting, but: project "omni": over the soft disk limit (9 GiB of 8 GiB)
}

// Add a project with limits, without pointer helpers.
func ExampleClient_AddProject() {
	srv := fakeServer()
	defer srv.Close()
	c := client.New(srv.URL, "operator-token", nil)
	p, err := c.AddProject(context.Background(), "omni", client.AreaLimits{
		Workspace: client.Limits{}.WithBytesSoft(8 << 30).WithBytesHard(10 << 30),
		Cache:     client.Limits{}.WithBytesHard(20 << 30),
		Scratch:   client.Limits{}.WithBytesHard(5 << 30),
	})
	fmt.Println(p.Project, p.State, err)
	// Output: omni ready <nil>
}

// Every error answer is a *client.ProblemError to branch on by status or type.
func ExampleProblemError() {
	srv := fakeServer()
	defer srv.Close()
	c := client.New(srv.URL, "reader-token", nil)
	_, err := c.Admission(context.Background(), "nope", false)
	var pe *client.ProblemError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		fmt.Println("no such project:", pe.Detail)
	}
	// Output: no such project: project "nope" not found
}

// The report a monitor reads: the trees at or over 90 % of their hard
// limit, fullest first, and whether any is at its limit (report --check).
func ExampleClient_Report() {
	srv := fakeServer()
	defer srv.Close()
	c := client.New(srv.URL, "reader-token", nil)
	rep, err := c.Report(context.Background(), client.ReportOptions{Over: 90, Sort: apiv1.SortByPercent, Check: true})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, t := range rep.Trees {
		fmt.Printf("%s/%s %.0f%%\n", t.Project, t.Area, t.Percent)
	}
	fmt.Println("at a hard limit:", rep.CheckFailed, "backend:", rep.Backend.Kind)
	// Output:
	// omni/workspace 100%
	// ci/cache 90%
	// at a hard limit: true backend: xfs
}
