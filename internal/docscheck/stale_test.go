package docscheck

import (
	"errors"
	"os"
	"strings"
	"testing"

	fig "github.com/goodput-exporter/goodput-exporter/internal/figures"
)

// Every cited figure names the commit it was measured at and what it
// measures (packages and what they import); none of those may have
// changed since, so that a change that moves a figure measures it again
// (`make figures`) in the same branch. Without git history (an archive,
// a shallow clone) the test is skipped, saying so.
func TestCitedFiguresAreNotStale(t *testing.T) {
	if os.Getenv(fig.MeasuringEnv) != "" {
		t.Skip("make figures is timing the test suite: the figures are being measured again")
	}
	tables := TablesWith(read(t, "docs/benchmarks.md"), "id", "figure", "what", "measures", "commit", "command")
	if len(tables) != 1 {
		t.Fatalf("docs/benchmarks.md: %d tables of cited figures with measures, commit and command columns, want 1", len(tables))
	}
	t.Chdir(root)
	type key struct{ commit, roots string }
	checked := map[key][]string{}
	for _, row := range tables[0].Rows {
		id := Code(row[0])
		roots, commit, cmd := Code(row[3]), Code(row[4]), Code(row[5])
		if len(id) != 1 || len(roots) == 0 || len(commit) != 1 || len(cmd) != 1 {
			t.Fatalf("figure row %q: want an id, the packages it measures, its commit and its command, each as code", row)
		}
		k := key{commit[0], strings.Join(roots, " ")}
		changes, done := checked[k]
		if !done {
			paths, err := fig.Paths(roots)
			if err != nil {
				t.Fatal(err)
			}
			changes, err = fig.Changes(commit[0], paths)
			if errors.Is(err, fig.ErrNoHistory) {
				t.Skipf("cannot tell whether the figures are stale: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			checked[k] = changes
		}
		if len(changes) > 0 {
			t.Errorf("%s was measured at %s; since then %d commits changed what it measures (%s and what they import), run `make figures` and commit the table:\n  %s",
				id[0], commit[0], len(changes), strings.Join(roots, ", "), strings.Join(changes, "\n  "))
		}
	}
}
