// Command fakebd stands in for bd, the beads CLI (1.0.5), in tests. Its
// issues are a JSON object (id → issue object, with bd's fields) in the file
// $FAKEBD_DB, which the test writes; every call is appended to $FAKEBD_LOG,
// if set, as one JSON line {"args":[...]}. It behaves as the real bd does in
// the ways ../shared/BEADS.md records, kind to no caller:
//
//	show ID --json       [issue] as bd 1.0 ({issue} with FAKEBD_FORMAT=object);
//	                     empty fields omitted, no dependents or comments (their
//	                     counts instead)
//	update ID --status S [--json]   with --json: [issue], started_at set
//	close ID --reason R [--force]   refused (exit 1) while the issue has an open
//	                     blocker, or is an epic with open children, unless --force
//	ready --json [--limit N]        open, unblocked issues by priority, without
//	                     dependencies; at most 100 unless --limit (0: all), with
//	                     "Showing 100 of N issues" on stderr when cut
//	blocked --json       the blocked issues, each with blocked_by and blocked_by_count
//	create TITLE|--title T [-t TYPE] [-p N] [-d D] [-l L,L] [--parent EPIC] [--json]
//	                     id bd-N (EPIC.N under a parent); --json prints the
//	                     issue with "schema_version": 1 inline
//	dep add A B [--type T]          A depends on B (T is blocks by default)
//
// Readiness is bd's: "blocks", "conditional-blocks" and "waits-for"
// dependencies on an issue that is not closed hold an issue back, but not
// one on a pinned issue; the child of a blocked parent is blocked.
//
// Errors: exit 1, "Error: ..." on stderr and, with --json, on stdout
// {"error":"...","schema_version":1} (a string), or with BD_JSON_ENVELOPE=1
// {"schema_version":1,"data":{"error":"..."}}.
//
// Flags may also be written --flag=value. A dependency is written as bd 1.0
// shows it ({"id", "title", "status", "dependency_type"}); an older entry
// ({"depends_on_id", "type"}) is read too. show prints the entries as the
// database holds them, or, with FAKEBD_LIVE_DEPS=1, with the current status
// of each one's issue, as bd computes it; readiness always reads the current
// status.
//
// FAKEBD_FAIL=update,close (a comma list of commands) makes those fail:
// exit 1, with a message on stderr. FAKEBD_NOTICE=text writes text on
// stderr at every call, as bd does with its notices (a migration, an
// auto-import), which vibeteam must not lose. An unknown id fails as bd
// does. Calls
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

// jsonOut: the call asked for JSON (its errors are JSON too).
var jsonOut bool

func main() {
	args := os.Args[1:]
	if log := os.Getenv("FAKEBD_LOG"); log != "" {
		line, _ := json.Marshal(map[string]any{"args": args})
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, _ = f.Write(append(line, '\n'))
			_ = f.Close()
		}
	}
	jsonOut = slices.Contains(args, "--json")
	if len(args) == 0 {
		fail("no command given (try bd help)")
	}
	cmd := args[0]
	if n := os.Getenv("FAKEBD_NOTICE"); n != "" {
		fmt.Fprintln(os.Stderr, n)
	}
	if slices.Contains(strings.Split(os.Getenv("FAKEBD_FAIL"), ","), cmd) {
		fail(cmd + " failed: database is locked (FAKEBD_FAIL)")
	}
	unlock := lock()
	defer unlock()
	db := load()
	flag := func(names ...string) string {
		for i, a := range args {
			for _, name := range names {
				if a == name && i+1 < len(args) {
					return args[i+1]
				}
				if v, ok := strings.CutPrefix(a, name+"="); ok {
					return v
				}
			}
		}
		return ""
	}
	get := func(id string) issue {
		is, ok := db[id]
		if !ok {
			failAs(fmt.Sprintf("issue %s not found (no issue found matching %q)", id, id), "no issues found matching the provided IDs")
		}
		return is
	}
	switch cmd {
	case "show":
		is := get(arg(args, 1))
		if os.Getenv("FAKEBD_LIVE_DEPS") == "1" {
			is = withLiveDeps(db, is)
		}
		shown := omitEmpty(is)
		delete(shown, "dependents")
		delete(shown, "comments")
		deps, _ := is["dependencies"].([]any)
		shown["dependency_count"] = len(deps)
		shown["dependent_count"] = len(dependents(db, is["id"].(string), ""))
		shown["comment_count"] = 0
		if os.Getenv("FAKEBD_FORMAT") == "object" {
			out(shown)
		} else {
			out([]issue{shown})
		}
	case "update":
		is := get(arg(args, 1))
		s := flag("--status", "-s")
		if s == "" {
			fail("no updates specified")
		}
		is["status"] = s
		if s == "in_progress" {
			is["started_at"] = "2026-11-24T12:00:20Z"
		}
		save(db)
		if jsonOut {
			out([]issue{omitEmpty(is)})
		} else {
			fmt.Printf("✓ Updated issue: %s\n", is["id"])
		}
	case "close":
		is := get(arg(args, 1))
		id := is["id"].(string)
		if !slices.Contains(args, "--force") {
			if open := openBlocks(db, is); len(open) > 0 {
				fail(fmt.Sprintf("cannot close %s: blocked by open issues [%s] (use --force to override)", id, strings.Join(open, ", ")))
			}
			if is["issue_type"] == "epic" {
				n := 0
				for _, c := range dependents(db, id, "parent-child") {
					if !done(str(db[c], "status")) {
						n++
					}
				}
				if n > 0 {
					fail(fmt.Sprintf("cannot close epic %s: %d open child issue(s); close children first or use --force to override", id, n))
				}
			}
		}
		is["status"] = "closed"
		is["close_reason"] = flag("--reason", "-r")
		save(db)
		if jsonOut {
			out([]issue{omitEmpty(is)})
		} else {
			fmt.Printf("✓ Closed %s: %s\n", id, flag("--reason", "-r"))
		}
	case "ready":
		limit := 100
		if l := flag("--limit", "-n"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 {
				fail("invalid --limit " + strconv.Quote(l))
			}
			limit = n
		}
		ready := []issue{}
		for _, id := range byPriority(db) {
			if is := db[id]; is["status"] == "open" && len(blockersOf(db, is, nil)) == 0 {
				r := omitEmpty(is)
				delete(r, "dependencies")
				ready = append(ready, r)
			}
		}
		if limit > 0 && len(ready) > limit {
			fmt.Fprintf(os.Stderr, "Showing %d of %d issues (use --limit 0 to show all)\n", limit, len(ready))
			ready = ready[:limit]
		}
		out(ready)
	case "blocked":
		list := []issue{}
		for _, id := range byPriority(db) {
			is := db[id]
			if done(str(is, "status")) {
				continue
			}
			if by := blockersOf(db, is, nil); len(by) > 0 {
				b := omitEmpty(is)
				b["blocked_by"] = by
				b["blocked_by_count"] = len(by)
				list = append(list, b)
			}
		}
		out(list)
	case "create":
		title := flag("--title")
		if title == "" && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			title = args[1]
		}
		if title == "" {
			fail("title required")
		}
		parent := flag("--parent")
		var id string
		if parent != "" {
			get(parent)
			id = fmt.Sprintf("%s.%d", parent, len(dependents(db, parent, "parent-child"))+1)
		} else {
			id = fmt.Sprintf("bd-%d", len(db)+1)
			for n := len(db) + 2; db[id] != nil; n++ {
				id = fmt.Sprintf("bd-%d", n)
			}
		}
		typ := flag("--type", "-t")
		if typ == "" {
			typ = "task"
		}
		prio := 2
		if p := flag("--priority", "-p"); p != "" {
			prio, _ = strconv.Atoi(strings.TrimPrefix(p, "P"))
		}
		labels := []any{}
		if l := flag("--labels", "-l", "--label"); l != "" {
			for _, x := range strings.Split(l, ",") {
				labels = append(labels, x)
			}
		}
		deps := []any{}
		if parent != "" {
			deps = append(deps, issue{"id": parent, "title": db[parent]["title"], "status": db[parent]["status"], "dependency_type": "parent-child"})
		}
		is := issue{"id": id, "title": title, "description": flag("--description", "-d"), "status": "open",
			"priority": prio, "issue_type": typ, "labels": labels, "dependencies": deps,
			"created_at": "2026-11-24T12:00:17Z", "created_by": "tester", "updated_at": "2026-11-24T12:00:17Z"}
		db[id] = is
		save(db)
		if jsonOut {
			o := omitEmpty(is)
			o["schema_version"] = 1
			out(o)
		} else {
			fmt.Printf("✓ Created issue: %s\n", id)
		}
	case "dep":
		if arg(args, 1) != "add" {
			fail("unknown dep command " + strconv.Quote(args[1]))
		}
		a, b := get(arg(args, 2)), get(arg(args, 3))
		typ := flag("--type", "-t")
		if typ == "" {
			typ = "blocks"
		}
		deps, _ := a["dependencies"].([]any)
		a["dependencies"] = append(deps, issue{"id": b["id"], "title": b["title"], "status": b["status"], "dependency_type": typ})
		save(db)
		fmt.Printf("✓ Added dependency: %s depends on %s (%s)\n", a["id"], b["id"], typ)
	default:
		fail(fmt.Sprintf("unknown command %q for \"bd\"", cmd))
	}
}

func str(is issue, k string) string {
	s, _ := is[k].(string)
	return s
}

// done: an issue in this status no longer blocks.
func done(status string) bool { return status == "closed" || status == "tombstone" }

// omitEmpty is is without its empty fields, as bd prints it: empty
// strings, lists and objects, and null.
func omitEmpty(is issue) issue {
	o := make(issue, len(is))
	for k, v := range is {
		switch v := v.(type) {
		case nil:
			continue
		case string:
			if v == "" {
				continue
			}
		case []any:
			if len(v) == 0 {
				continue
			}
		case map[string]any:
			if len(v) == 0 {
				continue
			}
		}
		o[k] = v
	}
	return o
}

// dependents are the ids of the issues depending on id (of kind typ; ""
// is any kind).
func dependents(db map[string]issue, id, typ string) []string {
	var out []string
	for _, other := range sortedIDs(db) {
		deps, _ := db[other]["dependencies"].([]any)
		for _, d := range deps {
			did, dtyp, _ := dep(d)
			if did == id && (typ == "" || dtyp == typ) {
				out = append(out, other)
				break
			}
		}
	}
	return out
}

// openBlocks are the ids of the open issues is has a "blocks" dependency
// on (what bd close refuses for).
func openBlocks(db map[string]issue, is issue) []string {
	var out []string
	deps, _ := is["dependencies"].([]any)
	for _, d := range deps {
		id, typ, status := dep(d)
		if other, ok := db[id]; ok {
			status = str(other, "status")
		}
		if typ == "blocks" && !done(status) && status != "pinned" {
			out = append(out, id)
		}
	}
	return out
}

// blockersOf are the ids that hold is back, as bd ready and bd blocked
// compute it: blocking kinds of dependency on an issue neither closed nor
// pinned, and a parent that is blocked itself.
func blockersOf(db map[string]issue, is issue, seen []string) []string {
	var out []string
	deps, _ := is["dependencies"].([]any)
	for _, d := range deps {
		id, typ, status := dep(d)
		other, known := db[id]
		if known {
			status = str(other, "status")
		}
		switch typ {
		case "blocks", "conditional-blocks", "waits-for":
			if !done(status) && status != "pinned" {
				out = append(out, id)
			}
		case "parent-child":
			self := str(is, "id")
			if known && !slices.Contains(seen, id) && id != self {
				if len(blockersOf(db, other, append(seen, self))) > 0 {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// byPriority are the ids by priority (0 first), then as sortedIDs.
func byPriority(db map[string]issue) []string {
	ids := sortedIDs(db)
	prio := func(id string) float64 {
		switch p := db[id]["priority"].(type) {
		case float64:
			return p
		case int:
			return float64(p)
		}
		return 2
	}
	slices.SortStableFunc(ids, func(a, b string) int {
		pa, pb := prio(a), prio(b)
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	return ids
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
		fail(fmt.Sprintf("%s: missing argument", args[0]))
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
		fail(err.Error())
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fail(err.Error())
	}
	return func() { _ = f.Close() }
}

func load() map[string]issue {
	db := map[string]issue{}
	path := os.Getenv("FAKEBD_DB")
	if path == "" {
		fail("no beads database found (FAKEBD_DB is not set)")
	}
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		fail(err.Error())
	default:
		if err := json.Unmarshal(data, &db); err != nil {
			fail("corrupt database: " + err.Error())
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
		fail(err.Error())
	}
	if err := os.Rename(tmp, path); err != nil {
		fail(err.Error())
	}
}

func out(v any) {
	data, _ := json.MarshalIndent(v, "", "  ")
	fmt.Println(string(data))
}

// fail exits 1 with msg on stderr, as bd does, and with --json the error
// on stdout too. Deferred unlocks do not run: the lock goes with the
// process.
func fail(msg string) { failAs(msg, msg) }

// failAs is fail with a JSON error of its own words.
func failAs(msg, jsonMsg string) {
	fmt.Fprintln(os.Stderr, "Error: "+msg)
	if jsonOut {
		if os.Getenv("BD_JSON_ENVELOPE") == "1" {
			out(map[string]any{"schema_version": 1, "data": map[string]any{"error": jsonMsg}})
		} else {
			out(map[string]any{"error": jsonMsg, "schema_version": 1})
		}
	}
	os.Exit(1)
}
