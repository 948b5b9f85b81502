package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// envName is what an environment variable's name looks like.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// Every environment variable the code reads is in docs/CONFIGURATION.md:
// each CLOPEN_* name anywhere in the workspace's Go code, and every other
// variable name passed to an env lookup (os.Getenv, os.LookupEnv, a getenv
// parameter) or listed in a field that names variables (KeyEnv, BaseURLEnv).
func TestConfigurationReferenceListsEveryVariable(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "CONFIGURATION.md"))
	if err != nil {
		t.Fatal(err)
	}
	read := variablesRead(t, root)
	if len(read) < 40 {
		t.Fatalf("found only %d variables read by the code: the scan is broken", len(read))
	}
	web := webVariablesRead(t, filepath.Join(root, "web"))
	if !slices.Contains(web, "CLOPEN_E2E_URL") {
		t.Fatalf("found %v in the web app's code, not CLOPEN_E2E_URL: the scan is broken", web)
	}
	read = append(read, web...)
	for _, name := range read {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/CONFIGURATION.md does not list `%s`, which the code reads", name)
		}
	}
}

// The scan finds the lookups the reference is checked against.
func TestVariablesReadFindsLookups(t *testing.T) {
	dir := t.TempDir()
	src := `package x
import "os"
type profile struct{ KeyEnv []string }
var p = profile{KeyEnv: []string{"SOME_API_KEY"}}
func f(getenv func(string) string) {
	_ = os.Getenv("DATABASE_URL")
	_, _ = os.LookupEnv("OTHER_VAR")
	_ = getenv("PARAM_VAR")
	_ = "CLOPEN_ANYWHERE"
	_ = "NOT_A_LOOKUP"
	_ = "CLOPEN_X=set-for-a-child"
}`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := variablesRead(t, dir)
	want := []string{"CLOPEN_ANYWHERE", "DATABASE_URL", "OTHER_VAR", "PARAM_VAR", "SOME_API_KEY"}
	if !slices.Equal(got, want) {
		t.Errorf("variablesRead = %v, want %v", got, want)
	}
}

// variablesRead returns, sorted, the variables read by the non-test Go files
// under root.
func variablesRead(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if name := envLiteral(n); strings.HasPrefix(name, "CLOPEN_") {
					seen[name] = true
				}
			case *ast.CallExpr:
				if isEnvLookup(n.Fun) {
					for _, a := range n.Args {
						if lit, ok := a.(*ast.BasicLit); ok && envLiteral(lit) != "" {
							seen[envLiteral(lit)] = true
						}
					}
				}
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && strings.HasSuffix(key.Name, "Env") {
					ast.Inspect(n.Value, func(m ast.Node) bool {
						if lit, ok := m.(*ast.BasicLit); ok && envLiteral(lit) != "" {
							seen[envLiteral(lit)] = true
						}
						return true
					})
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// processEnv finds process.env.NAME and process.env['NAME'] in TypeScript.
var processEnv = regexp.MustCompile(`process\.env(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])`)

// webVariablesRead returns, sorted, the variables the web app's build,
// tooling and browser suite read (the TypeScript under dir, not its
// packages).
func webVariablesRead(t *testing.T, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || strings.HasPrefix(name, ".") || name == "test-results" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".ts") || strings.HasSuffix(path, ".d.ts") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range processEnv.FindAllStringSubmatch(string(src), -1) {
			if name := m[1] + m[2]; envName.MatchString(name) && name != "NODE_ENV" {
				seen[name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// envLiteral is the variable name a string literal holds, or "".
func envLiteral(lit *ast.BasicLit) string {
	if lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil || !envName.MatchString(s) {
		return ""
	}
	return s
}

// isEnvLookup reports whether fun names a function that reads the
// environment: os.Getenv, os.LookupEnv, or a getenv, lookupEnv, get or env
// value (how the services pass the environment around).
func isEnvLookup(fun ast.Expr) bool {
	var name string
	switch f := fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	default:
		return false
	}
	name = strings.ToLower(name)
	return name == "getenv" || name == "lookupenv" || name == "get" || name == "env"
}
