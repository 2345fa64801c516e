package pullrequest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/imagebump/imagebump/pullrequest"
)

// inMemory is a Provider that keeps its pull requests in memory. A real
// program uses github.New, gitlab.New or gitea.New instead.
type inMemory struct {
	prs      []pullrequest.PR
	comments []string
}

func (m *inMemory) Name() string { return "memory" }

func (m *inMemory) List(_ context.Context, head, base string) ([]pullrequest.PR, error) {
	var out []pullrequest.PR
	for _, p := range m.prs {
		if p.Head == head && p.Base == base {
			out = append(out, p)
		}
	}
	return out, nil
}

func (m *inMemory) Create(_ context.Context, head, base, title, body string) (*pullrequest.PR, error) {
	m.prs = append(m.prs, pullrequest.PR{Number: len(m.prs) + 1, State: pullrequest.StateOpen, Head: head, Base: base, Title: title, Body: body})
	return &m.prs[len(m.prs)-1], nil
}

func (m *inMemory) Update(_ context.Context, number int, title, body string) (*pullrequest.PR, error) {
	p := &m.prs[number-1]
	p.Title, p.Body = title, body
	return p, nil
}

func (m *inMemory) AddLabels(_ context.Context, number int, labels []string) error {
	m.prs[number-1].Labels = append(m.prs[number-1].Labels, labels...)
	return nil
}

func (m *inMemory) Comment(_ context.Context, number int, body string) error {
	m.comments = append(m.comments, fmt.Sprintf("#%d: %s", number, body))
	return nil
}

func (m *inMemory) Close(_ context.Context, number int) error {
	m.prs[number-1].State = pullrequest.StateClosed
	return nil
}

// Example shows the lifecycle: a bump opens a pull request, a newer bump
// updates it, running again changes nothing, and once it is closed the same
// bump is not proposed again.
func Example() {
	ctx := context.Background()
	forge := &inMemory{}
	bump := func(tag string) pullrequest.Request {
		return pullrequest.Request{
			Head:  "imagebump/main",
			Base:  "main",
			Title: "Bump apps:app to " + tag,
			Changes: []pullrequest.Change{{
				File: "apps/app.yaml", Line: 12, Policy: "apps:app",
				Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:" + tag,
			}},
			Labels: []string{"dependencies"},
		}
	}
	for _, step := range []struct {
		tag   string
		close bool
	}{{"1.5.0", false}, {"1.6.0", false}, {"1.6.0", false}, {"", true}, {"1.6.0", false}} {
		if step.close {
			forge.prs[0].State = pullrequest.StateClosed
			fmt.Println("someone closes #1")
			continue
		}
		res, err := pullrequest.Ensure(ctx, forge, bump(step.tag))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: #%d %s\n", step.tag, res.Number, res.Outcome)
	}
	fmt.Println(len(forge.prs), "pull request, labels", forge.prs[0].Labels)
	// Output:
	// 1.5.0: #1 opened
	// 1.6.0: #1 updated
	// 1.6.0: #1 unchanged
	// someone closes #1
	// 1.6.0: #1 skipped
	// 1 pull request, labels [dependencies]
}

// ExampleClose closes a pull request whose bumps someone made on main by
// hand: the next run has no changes, so it closes the stale pull request
// instead of calling Ensure. Once it is closed, Close writes nothing.
func ExampleClose() {
	ctx := context.Background()
	forge := &inMemory{}
	_, err := pullrequest.Ensure(ctx, forge, pullrequest.Request{
		Head:  "imagebump/main",
		Base:  "main",
		Title: "Bump apps:app to 1.5.0",
		Changes: []pullrequest.Change{{
			File: "apps/app.yaml", Line: 12, Policy: "apps:app",
			Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.5.0",
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	// ... main gets the bump by hand; the next run finds nothing to bump.
	for range 2 {
		res, err := pullrequest.Close(ctx, forge, "imagebump/main", "main", "main already has these bumps.", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s #%d\n", res.Outcome, res.Number)
	}
	fmt.Println(forge.comments)
	// Output:
	// closed #1
	// none #0
	// [#1: main already has these bumps.]
}
