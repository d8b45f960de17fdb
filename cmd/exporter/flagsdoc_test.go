package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/goodput-exporter/goodput-exporter/internal/docscheck"
)

// serveFlags are the flags `goodput-exporter serve` parses (the global
// ones included), by name, as kong builds them from the cli struct.
func serveFlags(t *testing.T) (map[string]*kong.Flag, *kong.Application) {
	t.Helper()
	var c cli
	parser, err := kong.New(&c, kong.Name("goodput-exporter"), cliVars())
	if err != nil {
		t.Fatal(err)
	}
	var serve *kong.Node
	for _, n := range parser.Model.Children {
		if n.Name == "serve" {
			serve = n
		}
	}
	if serve == nil {
		t.Fatal("no serve command")
	}
	out := map[string]*kong.Flag{}
	for _, group := range serve.AllFlags(true) {
		for _, f := range group {
			if f.Name != "help" {
				out[f.Name] = f
			}
		}
	}
	return out, parser.Model
}

// docFlag is one row of a flags table: the flag it names and its
// default cell.
type docFlag struct {
	file, name, dflt, row string
	negatable             bool
}

// flagRows returns the rows of every "| flag | default | meaning |" table
// of README.md and docs/*.md, and the file that has the full table of
// serve's flags.
func flagRows(t *testing.T) []docFlag {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	var out []docFlag
	for _, f := range append([]string{"../../README.md"}, files...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../../")
		for _, tab := range docscheck.TablesWith(string(raw), "flag", "default", "meaning") {
			for _, row := range tab.Rows {
				var flags []string
				for _, c := range docscheck.Code(row[0]) {
					if strings.HasPrefix(c, "--") {
						flags = append(flags, c)
					}
				}
				if len(flags) != 1 {
					t.Errorf("%s: a row of the flags table at line %d names %d flags, want one a row: %q", name, tab.Line, len(flags), row[0])
					continue
				}
				flag, _, _ := strings.Cut(strings.TrimPrefix(flags[0], "--"), " ")
				neg := strings.HasPrefix(flag, "[no-]")
				out = append(out, docFlag{file: name, name: strings.TrimPrefix(flag, "[no-]"), dflt: row[1], row: strings.Join(row, " | "), negatable: neg})
			}
		}
	}
	return out
}

// The flags tables of the docs say what the command line parses: each
// flag of serve in docs/configuration.md's table once, no flag that does
// not exist, `--[no-]` exactly on the negatable ones, the default kong
// applies (on/off for booleans; "none" or "off" when there is none), and
// the environment variable a flag reads.
func TestFlagsTableMatchesTheCommandLine(t *testing.T) {
	flags, _ := serveFlags(t)
	rows := flagRows(t)
	inConfig := map[string]int{}
	for _, r := range rows {
		if r.file == "docs/configuration.md" {
			inConfig[r.name]++
		}
		f := flags[r.name]
		if f == nil {
			t.Errorf("%s documents --%s, which serve does not parse", r.file, r.name)
			continue
		}
		if want := f.Tag.Negatable != ""; r.negatable != want {
			t.Errorf("%s: --%s is written with [no-]: %v, but it is negatable: %v", r.file, r.name, r.negatable, want)
		}
		switch {
		case f.IsBool():
			want := "off"
			if f.Default == "true" {
				want = "on"
			}
			if !strings.HasPrefix(r.dflt, want) {
				t.Errorf("%s: --%s defaults to %q, the docs say %q", r.file, r.name, want, r.dflt)
			}
		case f.Default != "":
			if !strings.HasPrefix(r.dflt, "`"+f.Default+"`") {
				t.Errorf("%s: --%s defaults to `%s`, the docs say %q", r.file, r.name, f.Default, r.dflt)
			}
		case len(f.Envs) > 0 && strings.HasPrefix(r.dflt, "`$"):
			if r.dflt != "`$"+f.Envs[0]+"`" {
				t.Errorf("%s: --%s defaults to $%s, the docs say %q", r.file, r.name, f.Envs[0], r.dflt)
			}
		case !strings.HasPrefix(r.dflt, "none") && !strings.HasPrefix(r.dflt, "off"):
			t.Errorf("%s: --%s has no default, the docs say %q (write none or off, and what applies instead)", r.file, r.name, r.dflt)
		}
		for _, env := range f.Envs {
			if !strings.Contains(r.row, env) {
				t.Errorf("%s: --%s reads $%s, which its row does not say", r.file, r.name, env)
			}
		}
	}
	var names []string
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if inConfig[n] != 1 {
			t.Errorf("docs/configuration.md lists --%s %d times, want once", n, inConfig[n])
		}
	}
}

// The commands table of docs/configuration.md lists every command the
// binary has, and no other.
func TestCommandsTableMatchesTheCommandLine(t *testing.T) {
	_, app := serveFlags(t)
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	tabs := docscheck.TablesWith(string(raw), "command", "what it does")
	if len(tabs) != 1 {
		t.Fatalf("docs/configuration.md has %d commands tables, want 1", len(tabs))
	}
	documented := map[string]bool{}
	for _, row := range tabs[0].Rows {
		code := docscheck.Code(row[0])
		if len(code) == 0 {
			t.Errorf("docs/configuration.md: command row %q names no command", row[0])
			continue
		}
		name, _, _ := strings.Cut(code[0], " ")
		documented[name] = true
	}
	for _, n := range app.Children {
		if n.Hidden {
			continue
		}
		if !documented[n.Name] {
			t.Errorf("docs/configuration.md does not list the command %s", n.Name)
		}
		delete(documented, n.Name)
	}
	for n := range documented {
		t.Errorf("docs/configuration.md lists a command %s the binary does not have", n)
	}
}
