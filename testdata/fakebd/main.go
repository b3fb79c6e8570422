// Command fakebd stands in for bd, the beads CLI, in tests. Its issues are
// a JSON object (id → issue) in the file $FAKEBD_DB; every call is appended
// to $FAKEBD_LOG as one JSON line {"args":[...]}. It knows:
//
//	show ID --json                  [issue] (bd 1.0); {issue} with FAKEBD_FORMAT=object
//	update ID --status S
//	close ID --reason R
//	ready --json                    open issues whose blocking dependencies are closed
//	create --title T [--type X] [--description D] [--json]
//	dep add A B                     A depends on B (B blocks A)
//
// FAKEBD_FAIL=update,close makes those commands fail (exit 1).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
)

type issue = map[string]any

func main() {
	args := os.Args[1:]
	if log := os.Getenv("FAKEBD_LOG"); log != "" {
		line, _ := json.Marshal(map[string]any{"args": args})
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(line, '\n'))
			f.Close()
		}
	}
	if len(args) == 0 {
		fail("Error: no command")
	}
	if slices.Contains(strings.Split(os.Getenv("FAKEBD_FAIL"), ","), args[0]) {
		fail("Error: database is locked")
	}
	db := load()
	flag := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	get := func(id string) issue {
		is, ok := db[id]
		if !ok {
			fail(fmt.Sprintf("Error: issue %s not found", id))
		}
		return is
	}
	switch args[0] {
	case "show":
		is := get(arg(args, 1))
		if os.Getenv("FAKEBD_FORMAT") == "object" {
			out(is)
		} else {
			out([]issue{is})
		}
	case "update":
		is := get(arg(args, 1))
		if s := flag("--status"); s != "" {
			is["status"] = s
		}
		save(db)
	case "close":
		is := get(arg(args, 1))
		is["status"], is["close_reason"] = "closed", flag("--reason")
		save(db)
	case "ready":
		var ready []issue
		for _, id := range sortedIDs(db) {
			is := db[id]
			if is["status"] == "open" && !blocked(db, is) {
				ready = append(ready, is)
			}
		}
		if ready == nil {
			ready = []issue{}
		}
		out(ready)
	case "create":
		id := fmt.Sprintf("bd-%d", len(db)+1)
		typ := flag("--type")
		if typ == "" {
			typ = "task"
		}
		is := issue{"id": id, "title": flag("--title"), "description": flag("--description"), "status": "open", "issue_type": typ, "priority": 2, "labels": []any{}, "dependencies": []any{}}
		db[id] = is
		save(db)
		if slices.Contains(args, "--json") {
			out(is)
		} else {
			fmt.Printf("Created issue: %s\n", id)
		}
	case "dep":
		if arg(args, 1) != "add" {
			fail("Error: unknown dep command")
		}
		a, b := get(arg(args, 2)), get(arg(args, 3))
		deps, _ := a["dependencies"].([]any)
		a["dependencies"] = append(deps, map[string]any{"id": b["id"], "title": b["title"], "status": b["status"], "dependency_type": "blocks"})
		save(db)
	default:
		fail("Error: unknown command " + args[0])
	}
}

// blocked: an open blocking dependency (its current status in the db).
func blocked(db map[string]issue, is issue) bool {
	deps, _ := is["dependencies"].([]any)
	for _, d := range deps {
		dep, _ := d.(map[string]any)
		id, _ := dep["id"].(string)
		if other, ok := db[id]; ok && other["status"] != "closed" {
			return true
		}
	}
	return false
}

func sortedIDs(db map[string]issue) []string {
	ids := make([]string, 0, len(db))
	for id := range db {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func arg(args []string, i int) string {
	if i >= len(args) {
		fail("Error: missing argument")
	}
	return args[i]
}

func load() map[string]issue {
	db := map[string]issue{}
	data, err := os.ReadFile(os.Getenv("FAKEBD_DB"))
	if err == nil {
		if err := json.Unmarshal(data, &db); err != nil {
			fail("Error: corrupt database: " + err.Error())
		}
	}
	return db
}

func save(db map[string]issue) {
	data, _ := json.MarshalIndent(db, "", "  ")
	if err := os.WriteFile(os.Getenv("FAKEBD_DB"), data, 0o644); err != nil {
		fail("Error: " + err.Error())
	}
}

func out(v any) {
	data, _ := json.MarshalIndent(v, "", "  ")
	fmt.Println(string(data))
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}
