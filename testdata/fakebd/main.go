// Command fakebd stands in for bd, the beads CLI (1.0.5), in tests. Its
// issues are a JSON object (id → issue object, with bd's fields) in the file
// $FAKEBD_DB, which the test writes; every call is appended to $FAKEBD_LOG,
// if set, as one JSON line {"args":[...]}. It behaves as the real bd does in
// the ways ../shared/BEADS.md records, kind to no caller; its claims, epic
// status, refused closes, dependency rule and the shapes and order of
// ready, blocked, children, show, update and close were run side by side
// with a bd 1.0.5 built from source (2026-11-28) and agree but for the ids
// (bd-N, not a hash) and fields vibeteam does not read (owner):
//
//	show ID... --json    [issue, ...] as bd 1.0 ({issue} with FAKEBD_FORMAT=object);
//	                     empty fields omitted, no dependents or comments (their
//	                     counts instead), and its parent; an unknown id said on
//	                     stderr ("Error fetching ID: no issue found matching"),
//	                     exit 1 only when none was found
//	update ID... [--status S] [--claim] [--assignee A] [--json]
//	                     with --json: [issue, ...] as bd reads them back (no
//	                     dependencies); --claim is atomic (the fake's lock): an
//	                     open issue unassigned or yours becomes yours (BEADS_ACTOR,
//	                     else "tester") and in_progress, again for one already
//	                     yours; "Error claiming ID: issue already claimed by X"
//	                     for one assigned to another, "issue not claimable:
//	                     status S" else; exit 1 when no id was updated
//	close ID... --reason R [--reason R2 ...] [--force] [--json]
//	                     one reason for all or one per id; each refused on its
//	                     own (stderr), exit 1 when none closed: an open
//	                     blocker, or an epic with open children, unless --force
//	ready --json [--limit N]        open, unblocked issues by priority, the
//	                     newest first among equals (epics and issues assigned
//	                     to another too), dependencies as edges without status,
//	                     counts without parent-child links, parent; at most 100 unless
//	                     --limit (0: all), with "Showing 100 of N issues" on
//	                     stderr when cut
//	blocked --json       the blocked issues (newest first), each with blocked_by
//	                     and blocked_by_count, without dependencies
//	epic status [--eligible-only] --json   the open epics with children:
//	                     {epic, total_children, closed_children, eligible_for_close}
//	epic close-eligible --json      closes the eligible epics: {closed, count},
//	                     or [] when none is
//	children ID --json   the issue's children, any status, newest first
//	create TITLE|--title T [-t TYPE] [-p N] [-d D] [-l L,L] [--parent EPIC] [--json]
//	                     id bd-N (EPIC.N under a parent); --json prints the
//	                     issue with "schema_version": 1 inline
//	dep add A B [--type T]          A depends on B (T is blocks by default);
//	                     blocks joins two epics or two non-epics only:
//	                     "tasks can only block other tasks, not epics" else
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
		var shown []issue
		var missing []string
		for _, id := range ids(args) {
			is, ok := db[id]
			if !ok {
				missing = append(missing, fmt.Sprintf("Error fetching %s: no issue found matching %q", id, id))
				continue
			}
			if os.Getenv("FAKEBD_LIVE_DEPS") == "1" {
				is = withLiveDeps(db, is)
			}
			shown = append(shown, detailed(db, is))
		}
		for _, m := range missing {
			fmt.Fprintln(os.Stderr, m)
		}
		if len(shown) == 0 {
			// bd 1.0.5: the lines above, and the JSON error alone.
			if jsonOut {
				failJSON("no issues found matching the provided IDs")
			}
			os.Exit(1)
		}
		if os.Getenv("FAKEBD_FORMAT") == "object" {
			out(shown[0])
		} else {
			out(shown)
		}
	case "update":
		update(db, args, flag("--status", "-s"))
	case "close":
		closeIssues(db, args)
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
		for _, id := range byPriority(db, true) {
			if is := db[id]; is["status"] == "open" && len(blockersOf(db, is, nil)) == 0 {
				ready = append(ready, withCounts(db, is))
			}
		}
		if limit > 0 && len(ready) > limit {
			fmt.Fprintf(os.Stderr, "Showing %d of %d issues (use --limit 0 to show all)\n", limit, len(ready))
			ready = ready[:limit]
		}
		out(ready)
	case "blocked":
		list := []issue{}
		for _, id := range byPriority(db, true) {
			is := db[id]
			if done(str(is, "status")) {
				continue
			}
			if by := blockersOf(db, is, nil); len(by) > 0 {
				b := omitEmpty(is)
				delete(b, "dependencies") // bd 1.0.5: blocked_by instead
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
		// Each a second after the one before: bd ready lists the newest
		// first among equal priorities.
		at := fmt.Sprintf("2026-11-24T12:%02d:%02dZ", len(db)/60%60, len(db)%60)
		is := issue{"id": id, "title": title, "description": flag("--description", "-d"), "status": "open",
			"priority": prio, "issue_type": typ, "labels": labels, "dependencies": deps,
			"created_at": at, "created_by": actor(), "updated_at": at}
		db[id] = is
		save(db)
		if jsonOut {
			// bd prints the issue it created, without its dependencies.
			o := omitEmpty(is)
			delete(o, "dependencies")
			o["schema_version"] = 1
			out(o)
		} else {
			fmt.Printf("✓ Created issue: %s\n", id)
		}
	case "epic":
		epic(db, args)
	case "children":
		parent := get(arg(args, 1))["id"].(string)
		list := []issue{}
		for _, c := range dependents(db, parent, "parent-child") {
			list = append(list, withCounts(db, db[c]))
		}
		// The newest first, as bd 1.0.5 lists them.
		slices.SortStableFunc(list, func(a, b issue) int { return -strings.Compare(str(a, "created_at"), str(b, "created_at")) })
		out(list)
	case "dep":
		if arg(args, 1) != "add" {
			fail("unknown dep command " + strconv.Quote(args[1]))
		}
		a, b := get(arg(args, 2)), get(arg(args, 3))
		typ := flag("--type", "-t")
		if typ == "" {
			typ = "blocks"
		}
		// bd 1.0.5 (GH#1495): a blocks dependency joins two epics or two
		// non-epics, never one of each; other kinds are not checked.
		if aEpic, bEpic := a["issue_type"] == "epic", b["issue_type"] == "epic"; typ == "blocks" && aEpic != bEpic {
			if aEpic {
				fail("epics can only block other epics, not tasks")
			}
			fail("tasks can only block other tasks, not epics")
		}
		deps, _ := a["dependencies"].([]any)
		a["dependencies"] = append(deps, issue{"id": b["id"], "title": b["title"], "status": b["status"], "dependency_type": typ})
		save(db)
		fmt.Printf("✓ Added dependency: %s (%s) depends on %s (%s) (%s)\n", a["id"], a["title"], b["id"], b["title"], typ)
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

// byPriority are the ids by priority (0 first), then (newest, as bd ready
// sorts them) the latest created_at first, then as sortedIDs.
func byPriority(db map[string]issue, newest bool) []string {
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
		case newest:
			// RFC 3339 in UTC: later sorts after.
			return -strings.Compare(str(db[a], "created_at"), str(db[b], "created_at"))
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

// failJSON exits 1 with the JSON error on stdout and nothing more on
// stderr (what bd said is there already).
func failJSON(msg string) {
	if os.Getenv("BD_JSON_ENVELOPE") == "1" {
		out(map[string]any{"schema_version": 1, "data": map[string]any{"error": msg}})
	} else {
		out(map[string]any{"error": msg, "schema_version": 1})
	}
	os.Exit(1)
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

// valueFlags are the flags that take the next argument as their value.
var valueFlags = []string{"--reason", "-r", "--status", "-s", "--limit", "-n", "--type", "-t", "--priority", "-p",
	"--description", "-d", "--labels", "-l", "--label", "--parent", "--title", "--actor", "--assignee", "-a"}

// ids are a command's positional arguments after the command itself: the
// issue ids of show, update and close.
func ids(args []string) []string {
	var out []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case slices.Contains(valueFlags, a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			out = append(out, a)
		}
	}
	return out
}

// values are every value of a repeatable flag, in order.
func values(args []string, names ...string) []string {
	var out []string
	for i, a := range args {
		for _, name := range names {
			if a == name && i+1 < len(args) {
				out = append(out, args[i+1])
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// actor is who bd says "you" are: BEADS_ACTOR (or the older BD_ACTOR), as
// bd reads it before git's user.name; "tester" here when neither is set.
func actor() string {
	for _, k := range []string{"BEADS_ACTOR", "BD_ACTOR"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "tester"
}

// detailed is is as bd show prints it: empty fields omitted, no
// dependents or comments but their counts.
func detailed(db map[string]issue, is issue) issue {
	shown := omitEmpty(is)
	delete(shown, "dependents")
	delete(shown, "comments")
	deps, _ := is["dependencies"].([]any)
	for _, d := range deps {
		if did, typ, _ := dep(d); typ == "parent-child" {
			shown["parent"] = did
		}
	}
	shown["dependency_count"] = len(deps)
	shown["dependent_count"] = len(dependents(db, is["id"].(string), ""))
	shown["comment_count"] = 0
	return shown
}

// withCounts is is as bd ready, bd children and bd list print it
// (types.IssueWithCounts, bd 1.0.5): its dependencies as the database's
// edges ({issue_id, depends_on_id, type}, no status), its parent when it
// has one, and the counts of its dependencies and dependents that are
// not parent-child links.
func withCounts(db map[string]issue, is issue) issue {
	r := omitEmpty(is)
	id := str(is, "id")
	deps, _ := is["dependencies"].([]any)
	edges := []any{}
	links := 0
	for _, d := range deps {
		did, typ, _ := dep(d)
		if typ == "parent-child" {
			r["parent"] = did
		} else {
			links++
		}
		edges = append(edges, issue{"issue_id": id, "depends_on_id": did, "type": typ,
			"created_at": str(is, "created_at"), "created_by": str(is, "created_by"), "metadata": "{}"})
	}
	delete(r, "dependencies")
	if len(edges) > 0 {
		r["dependencies"] = edges
	}
	dependents := 0
	for _, other := range sortedIDs(db) {
		odeps, _ := db[other]["dependencies"].([]any)
		for _, d := range odeps {
			if did, typ, _ := dep(d); did == id && typ != "parent-child" {
				dependents++
				break
			}
		}
	}
	r["dependency_count"] = links
	r["dependent_count"] = dependents
	r["comment_count"] = 0
	return r
}

// update is bd update ID... [--status S] [--claim] [--json]: each id on
// its own, a failed one said on stderr; exit 1 when none was updated.
// --claim is bd's compare-and-swap: an open issue with no assignee (or
// you) becomes yours and in_progress; one in_progress that is yours
// already is claimed again; one assigned to another is refused, whatever
// its status.
func update(db map[string]issue, args []string, status string) {
	claim := slices.Contains(args, "--claim")
	assignee, assign := "", false
	if v := values(args, "--assignee", "-a"); len(v) > 0 {
		assignee, assign = v[len(v)-1], true
	}
	if status == "" && !claim && !assign {
		fmt.Println("No updates specified")
		return
	}
	var updated []issue
	for _, id := range ids(args) {
		is, ok := db[id]
		if !ok {
			fmt.Fprintf(os.Stderr, "Error resolving %s: no issue found matching %q\n", id, id)
			continue
		}
		if claim {
			me, who, st := actor(), str(is, "assignee"), str(is, "status")
			switch {
			case st == "in_progress" && who == me:
			case st == "open" && (who == "" || who == me):
				is["assignee"], is["status"] = me, "in_progress"
				if is["started_at"] == nil {
					is["started_at"] = "2026-11-24T12:00:20Z"
				}
			case who != "" && who != me:
				fmt.Fprintf(os.Stderr, "Error claiming %s: issue already claimed by %s\n", id, who)
				continue
			default:
				fmt.Fprintf(os.Stderr, "Error claiming %s: issue not claimable: status %s\n", id, st)
				continue
			}
		}
		if assign {
			is["assignee"] = assignee
		}
		if status != "" {
			is["status"] = status
			if status == "in_progress" && is["started_at"] == nil {
				is["started_at"] = "2026-11-24T12:00:20Z"
			}
		}
		// bd prints the issue as it reads it back: labels, no dependencies.
		u := omitEmpty(is)
		delete(u, "dependencies")
		updated = append(updated, u)
		if !jsonOut {
			fmt.Printf("✓ Updated issue: %s\n", id)
		}
	}
	if len(updated) == 0 {
		os.Exit(1)
	}
	save(db)
	if jsonOut {
		out(updated)
	}
}

// closeIssues is bd close ID... --reason R [--reason R2 ...] [--force]: one
// reason for all, or one per id in order. Each id is closed on its own; a
// refused one is said on stderr and the others go on; exit 1 when none
// closed. Refused without --force: an open blocker, an epic with open
// children.
func closeIssues(db map[string]issue, args []string) {
	list, reasons := ids(args), values(args, "--reason", "-r")
	if len(reasons) == 0 {
		reasons = []string{"Closed"}
	}
	if len(reasons) > 1 && len(reasons) != len(list) {
		fail(fmt.Sprintf("got %d close reasons for %d issue IDs; provide exactly one shared reason or one reason per issue", len(reasons), len(list)))
	}
	force := slices.Contains(args, "--force")
	for _, id := range list {
		// bd resolves every id first: an unknown one fails the whole call.
		if _, ok := db[id]; !ok {
			failAs(fmt.Sprintf("issue %s not found (no issue found matching %q)", id, id), "no issues found matching the provided IDs")
		}
	}
	var closed []issue
	for i, id := range list {
		is := db[id]
		if !force {
			if is["issue_type"] == "epic" {
				if n := len(openChildren(db, id)); n > 0 {
					fmt.Fprintf(os.Stderr, "cannot close epic %s: %d open child issue(s); close children first or use --force to override\n", id, n)
					continue
				}
			}
			if open := openBlocks(db, is); len(open) > 0 {
				fmt.Fprintf(os.Stderr, "cannot close %s: blocked by open issues [%s] (use --force to override)\n", id, strings.Join(open, " "))
				continue
			}
		}
		reason := reasons[0]
		if len(reasons) > 1 {
			reason = reasons[i]
		}
		is["status"], is["close_reason"] = "closed", reason
		c := omitEmpty(is)
		delete(c, "dependencies") // bd prints what it closed without them
		closed = append(closed, c)
		if !jsonOut {
			fmt.Printf("✓ Closed %s: %s\n", id, reason)
		}
	}
	if len(closed) == 0 {
		os.Exit(1)
	}
	save(db)
	if jsonOut {
		out(closed)
	}
}

// openChildren are the ids of an epic's children not closed.
func openChildren(db map[string]issue, id string) []string {
	var open []string
	for _, c := range dependents(db, id, "parent-child") {
		if !done(str(db[c], "status")) {
			open = append(open, c)
		}
	}
	return open
}

// epic is bd epic status [--eligible-only] and bd epic close-eligible: the
// open epics that have children, each with how many are closed; an epic
// whose children are all closed is eligible for closure, which nothing
// does by itself but close-eligible (reason "All children completed").
func epic(db map[string]issue, args []string) {
	type status struct {
		Epic           issue `json:"epic"`
		TotalChildren  int   `json:"total_children"`
		ClosedChildren int   `json:"closed_children"`
		Eligible       bool  `json:"eligible_for_close"`
	}
	list := []status{}
	for _, id := range sortedIDs(db) {
		is := db[id]
		children := dependents(db, id, "parent-child")
		if is["issue_type"] != "epic" || str(is, "status") == "closed" || len(children) == 0 {
			continue
		}
		st := status{Epic: omitEmpty(is), TotalChildren: len(children)}
		delete(st.Epic, "dependencies") // bd 1.0.5 prints the epic without them
		st.ClosedChildren = len(children) - len(openChildren(db, id))
		st.Eligible = st.ClosedChildren == st.TotalChildren
		if st.Eligible || !slices.Contains(args, "--eligible-only") {
			list = append(list, st)
		}
	}
	switch arg(args, 1) {
	case "status":
		out(list)
	case "close-eligible":
		closed := []string{}
		for _, st := range list {
			if st.Eligible {
				id := str(st.Epic, "id")
				db[id]["status"], db[id]["close_reason"] = "closed", "All children completed"
				closed = append(closed, id)
			}
		}
		if len(closed) == 0 {
			out([]any{})
			return
		}
		save(db)
		out(map[string]any{"closed": closed, "count": len(closed)})
	default:
		fail(fmt.Sprintf("unknown command %q for \"bd epic\"", args[1]))
	}
}
