package archtest

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// doc is the map these tests hold the tree to.
const doc = "docs/architecture.md"

// packages returns the folders (relative to the module root, with "/") that
// hold Go files: every package of the module, test-only ones included.
func packages(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the module: %v", err)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// moduleImports returns the packages of this module that dir's non-test
// files import (relative to the module root), sorted. It reads every file,
// whatever its build constraints: the map holds on every platform.
func moduleImports(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range imports(t, dir) {
		if rest, ok := strings.CutPrefix(p, module+"/"); ok {
			out = append(out, rest)
		} else if p == module {
			out = append(out, ".")
		}
	}
	return out
}

// documentedGraph returns the fenced block of doc whose info string is
// "imports": one line per package, "room -> its imports".
func documentedGraph(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatalf("open %s: %v", doc, err)
	}
	defer f.Close()
	graph := map[string][]string{}
	in, found := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && line == "```imports":
			if found {
				t.Fatalf("%s:%d: a second ```imports block: the map is one block", doc, n)
			}
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "":
			room, deps, ok := strings.Cut(line, "->")
			room = strings.TrimSpace(room)
			if !ok || room == "" {
				t.Fatalf("%s:%d: %q is not `room -> imports`", doc, n, line)
			}
			if _, dup := graph[room]; dup {
				t.Fatalf("%s:%d: %s has two lines", doc, n, room)
			}
			list := strings.Fields(deps)
			sort.Strings(list)
			graph[room] = list
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", doc, err)
	}
	if !found || in {
		t.Fatalf("%s has no closed ```imports block (the import graph)", doc)
	}
	return graph
}

// The import graph that docs/architecture.md states is the module's, line
// for line: a package that gains or loses an import of the module, and a
// package that comes or goes, fail here until the map says so.
func TestDocumentedImportGraphIsTheModules(t *testing.T) {
	documented := documentedGraph(t)
	for _, pkg := range packages(t) {
		got := moduleImports(t, pkg)
		want, ok := documented[pkg]
		delete(documented, pkg)
		line := strings.TrimSpace(pkg + " -> " + strings.Join(got, " "))
		switch {
		case !ok:
			t.Errorf("%s has no line for package %s; add\n\t%s", doc, pkg, line)
		case !slices.Equal(got, want):
			t.Errorf("%s says %s -> %s; the code says\n\t%s", doc, pkg, strings.Join(want, " "), line)
		}
	}
	for pkg := range documented {
		t.Errorf("%s maps %s, which is no package of the module", doc, pkg)
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// Every package of the module is a room of the rooms table (first column),
// in one row, and the table names no package that is not there.
func TestRoomsTableNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatalf("read %s: %v", doc, err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## The rooms\n")
	if !ok {
		t.Fatalf("%s has no section \"## The rooms\"", doc)
	}
	rest, _, _ = strings.Cut(rest, "\n## ")
	pkgs := packages(t)
	rows := map[string]int{}
	n := 0
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		n++
		if n <= 2 { // the header and its rule
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			room := m[1]
			if !slices.Contains(pkgs, room) {
				t.Errorf("the rooms table names %s, which is no package of the module", room)
			}
			rows[room]++
		}
	}
	for _, pkg := range pkgs {
		switch rows[pkg] {
		case 1:
		case 0:
			t.Errorf("the rooms table of %s has no row for package %s", doc, pkg)
		default:
			t.Errorf("the rooms table of %s names package %s in %d rows", doc, pkg, rows[pkg])
		}
	}
}
