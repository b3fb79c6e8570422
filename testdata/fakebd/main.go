// Command fakebd stands in for bd, the beads CLI, in tests. Its issues are
// a JSON object (id → issue object, with bd's fields) in the file
// $FAKEBD_DB, which the test writes; every call is appended to $FAKEBD_LOG,
// if set, as one JSON line {"args":[...]}. It knows:
//
//	show ID --json                  [issue] as bd 1.0; {issue} with FAKEBD_FORMAT=object
//	update ID --status S
//	close ID --reason R             status closed, R kept as close_reason
//	ready --json                    open issues without an open "blocks" dependency
//	create --title T [--type X] [--description D] [--json]   id bd-N
//	dep add A B [--type T]          A depends on B (T is blocks by default)
//
// Flags may also be written --flag=value. A dependency is written as bd 1.0
// shows it ({"id", "title", "status", "dependency_type"}); an older entry
// ({"depends_on_id", "type"}) is read too. show prints the entries as the
// database holds them, or, with FAKEBD_LIVE_DEPS=1, with the current status
// of each one's issue, as bd computes it; ready always reads the current
// status.
//
// FAKEBD_FAIL=update,close (a comma list of commands) makes those fail:
// exit 1, with a message on stderr. An unknown id fails as bd does. Calls
// are serialized with a lock beside the database, so that several at once
// (parallel runs) lose no update.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

type issue = map[string]any

func main() {
	args := os.Args[1:]
	if log := os.Getenv("FAKEBD_LOG"); log != "" {
		line, _ := json.Marshal(map[string]any{"args": args})
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, _ = f.Write(append(line, '\n'))
			_ = f.Close()
		}
	}
	if len(args) == 0 {
		fail("Error: no command given (try bd help)")
	}
	cmd := args[0]
	if slices.Contains(strings.Split(os.Getenv("FAKEBD_FAIL"), ","), cmd) {
		fail("Error: " + cmd + " failed: database is locked (FAKEBD_FAIL)")
	}
	unlock := lock()
	defer unlock()
	db := load()
	flag := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v
			}
		}
		return ""
	}
	get := func(id string) issue {
		is, ok := db[id]
		if !ok {
			fail(fmt.Sprintf("Error: issue %s not found (no issue found matching %q)", id, id))
		}
		return is
	}
	switch cmd {
	case "show":
		is := get(arg(args, 1))
		if os.Getenv("FAKEBD_LIVE_DEPS") == "1" {
			is = withLiveDeps(db, is)
		}
		if os.Getenv("FAKEBD_FORMAT") == "object" {
			out(is)
		} else {
			out([]issue{is})
		}
	case "update":
		is := get(arg(args, 1))
		s := flag("--status")
		if s == "" {
			fail("Error: no updates specified")
		}
		is["status"] = s
		save(db)
		fmt.Printf("✓ Updated issue: %s\n", is["id"])
	case "close":
		is := get(arg(args, 1))
		is["status"] = "closed"
		is["close_reason"] = flag("--reason")
		save(db)
		fmt.Printf("✓ Closed %s: %s\n", is["id"], flag("--reason"))
	case "ready":
		ready := []issue{}
		for _, id := range sortedIDs(db) {
			if is := db[id]; is["status"] == "open" && !blocked(db, is) {
				ready = append(ready, is)
			}
		}
		out(ready)
	case "create":
		title := flag("--title")
		if title == "" {
			fail("Error: title required")
		}
		id := fmt.Sprintf("bd-%d", len(db)+1)
		for n := len(db) + 2; db[id] != nil; n++ {
			id = fmt.Sprintf("bd-%d", n)
		}
		typ := flag("--type")
		if typ == "" {
			typ = "task"
		}
		is := issue{"id": id, "title": title, "description": flag("--description"), "status": "open",
			"priority": 2, "issue_type": typ, "labels": []any{}, "dependencies": []any{}}
		db[id] = is
		save(db)
		if slices.Contains(args, "--json") {
			out(is)
		} else {
			fmt.Printf("✓ Created issue: %s\n", id)
		}
	case "dep":
		if arg(args, 1) != "add" {
			fail("Error: unknown dep command " + strconv.Quote(args[1]))
		}
		a, b := get(arg(args, 2)), get(arg(args, 3))
		typ := flag("--type")
		if typ == "" {
			typ = "blocks"
		}
		deps, _ := a["dependencies"].([]any)
		a["dependencies"] = append(deps, issue{"id": b["id"], "title": b["title"], "status": b["status"], "dependency_type": typ})
		save(db)
		fmt.Printf("✓ Added dependency: %s depends on %s (%s)\n", a["id"], b["id"], typ)
	default:
		fail(fmt.Sprintf("Error: unknown command %q for \"bd\"", cmd))
	}
}

// dep reads a dependency in either shape: the other issue's id, the kind
// ("blocks" when not written) and the status it carries.
func dep(d any) (id, typ, status string) {
	m, _ := d.(map[string]any)
	str := func(k string) string { s, _ := m[k].(string); return s }
	if id = str("id"); id == "" {
		id = str("depends_on_id")
	}
	if typ = str("dependency_type"); typ == "" {
		typ = str("type")
	}
	if typ == "" {
		typ = "blocks"
	}
	return id, typ, str("status")
}

// blocked: an open "blocks" dependency (its status in the db, else the one
// the entry carries).
func blocked(db map[string]issue, is issue) bool {
	deps, _ := is["dependencies"].([]any)
	for _, d := range deps {
		id, typ, status := dep(d)
		if other, ok := db[id]; ok {
			status, _ = other["status"].(string)
		}
		if typ == "blocks" && status != "closed" {
			return true
		}
	}
	return false
}

// withLiveDeps is is with each bd 1.0 dependency entry given the current
// status of its issue, as bd computes it when it shows one.
func withLiveDeps(db map[string]issue, is issue) issue {
	deps, _ := is["dependencies"].([]any)
	if len(deps) == 0 {
		return is
	}
	cp := make(issue, len(is))
	for k, v := range is {
		cp[k] = v
	}
	live := make([]any, len(deps))
	for i, d := range deps {
		live[i] = d
		m, _ := d.(map[string]any)
		id, _ := m["id"].(string)
		other, found := db[id]
		if !found {
			continue
		}
		e := make(issue, len(m))
		for k, v := range m {
			e[k] = v
		}
		e["status"] = other["status"]
		live[i] = e
	}
	cp["dependencies"] = live
	return cp
}

func sortedIDs(db map[string]issue) []string {
	ids := make([]string, 0, len(db))
	for id := range db {
		ids = append(ids, id)
	}
	// bd-2 before bd-10.
	slices.SortFunc(ids, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return ids
}

func arg(args []string, i int) string {
	if i >= len(args) {
		fail(fmt.Sprintf("Error: %s: missing argument", args[0]))
	}
	return args[i]
}

// lock takes an exclusive lock on $FAKEBD_DB.lock until unlock.
func lock() (unlock func()) {
	path := os.Getenv("FAKEBD_DB")
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		fail("Error: " + err.Error())
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fail("Error: " + err.Error())
	}
	return func() { _ = f.Close() }
}

func load() map[string]issue {
	db := map[string]issue{}
	path := os.Getenv("FAKEBD_DB")
	if path == "" {
		fail("Error: no beads database found (FAKEBD_DB is not set)")
	}
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		fail("Error: " + err.Error())
	default:
		if err := json.Unmarshal(data, &db); err != nil {
			fail("Error: corrupt database: " + err.Error())
		}
	}
	return db
}

// save writes the db whole, through a temporary file renamed over it.
func save(db map[string]issue) {
	path := os.Getenv("FAKEBD_DB")
	data, _ := json.MarshalIndent(db, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		fail("Error: " + err.Error())
	}
	if err := os.Rename(tmp, path); err != nil {
		fail("Error: " + err.Error())
	}
}

func out(v any) {
	data, _ := json.MarshalIndent(v, "", "  ")
	fmt.Println(string(data))
}

// fail exits 1 with msg on stderr, as bd does. Deferred unlocks do not
// run: the lock goes with the process.
func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}
