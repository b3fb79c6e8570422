package worktree

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MergeResult is how a merge went. Exactly one of these holds:
//   - Merged: Commit is the new merge commit on the base branch (or, with
//     UpToDate, the commit of the base's first-parent history that brought
//     the branch in: see broughtIn);
//   - Conflicts: the branch and the base conflict; nothing was changed;
//   - Refused: git refused to update the checkout where the base branch is
//     checked out (its local changes would be overwritten, a rebase in
//     progress, ...); Refused is git's message; nothing was changed;
//   - GateRed: the gate failed on the merge commit Commit; nothing was
//     changed;
//   - Moving: the base moved during every try of the merge; nothing was
//     changed; Moving says so.
//
// Attempts is how many times the merge was computed (more than once when
// the base moved while it was being checked).
type MergeResult struct {
	Merged    bool
	UpToDate  bool
	Commit    string
	Conflicts []Conflict
	Refused   string
	GateRed   bool
	Moving    string
	Attempts  int
	// Waited is how long the merge waited for the repository's merge
	// queue (0 when it was free).
	Waited time.Duration
	// Batch, for a merge a Batcher landed with others, or found red
	// among them, is the batch's branches, oldest first.
	Batch []string
}

// Conflict is one conflicting file: the <<<<<<< ... >>>>>>> hunks of the
// merged content (with a few lines of context, bounded), or, for a conflict
// without content hunks (modify/delete, binary, rename), git's message.
type Conflict struct {
	Path    string
	Hunks   string
	Message string // git's CONFLICT message(s) for the file
}

// Bounds of the conflict report.
const (
	hunkContext      = 3
	maxHunkLines     = 200   // per file
	maxConflictBytes = 64000 // all hunks together
)

// Merge merges the worktree's branch into its base branch as a merge
// commit (--no-ff) with message, without a gate: MergeWith with none.
func (r *Repo) Merge(ctx context.Context, wt *Worktree, message string) (MergeResult, error) {
	return r.MergeWith(ctx, wt, message, MergeOptions{})
}

// MergeWith merges the worktree's branch into its base branch as a merge
// commit (--no-ff) with message. The merge is first computed in the object
// store (git merge-tree --write-tree), touching nothing; a conflict is
// returned as Conflicts. A clean merge becomes a commit whose parents are
// the base and the branch; with a gate, the gate checks that commit (see
// Gate); then:
//   - when the base branch is checked out nowhere, only its ref moves
//     (git update-ref, compare-and-swap on the old commit);
//   - when it is checked out in a worktree (usually the user's checkout),
//     that checkout is fast-forwarded to the merge commit by git merge
//     --ff-only, which updates index and files as a merge would, keeps
//     unrelated local changes and refuses — changing nothing — when local
//     changes (or untracked or ignored files) would be overwritten; that
//     refusal is returned as Refused.
//
// When the base moved since the merge was computed (a commit by the user,
// made while a gate ran), the merge is computed again on the new base, and
// its gate runs again, up to opts.Tries times.
//
// Merges of a repository form one queue, across processes: MergeWith
// holds the merge queue's lock from the computation to the landing (gate
// included), and the repository's lock only while it changes refs or
// worktrees, so a long gate does not hold up the creation of other beads'
// worktrees.
func (r *Repo) MergeWith(ctx context.Context, wt *Worktree, message string, opts MergeOptions) (res MergeResult, err error) {
	if wt == nil || wt.Branch == "" || wt.Base == "" {
		return res, errors.New("no worktree")
	}
	if strings.TrimSpace(message) == "" {
		return res, errors.New("a merge needs a message")
	}
	if err := r.checkMergeTree(ctx); err != nil {
		return res, err
	}
	// Before the queue: the less a merge does holding it, the more merges
	// land in a second.
	id, err := identity(ctx, r.Top)
	if err != nil {
		return res, err
	}
	var seen []gitWorktree // where the base was checked out: land checks it still is
	if list, err := r.worktreesNow(ctx); err == nil {
		seen = findBranch(list, "refs/heads/"+wt.Base)
	}
	// How long it waited in the queue: only when another merge held it,
	// so an uncontended merge says nothing.
	began, busy := time.Now(), false
	unlock, queueLock, err := r.queue(ctx, func() {
		busy = true
		if opts.Queued != nil {
			opts.Queued()
		}
	})
	if err != nil {
		return res, err
	}
	defer unlock()
	if busy {
		waited := time.Since(began)
		defer func() { res.Waited = waited }()
	}
	if opts.Gate != nil {
		// Holding the queue, no gate runs: a gate worktree still there
		// was left by a vibeteam that was killed.
		r.removeStaleGates(ctx)
	}
	tries := opts.Tries
	if tries <= 0 {
		tries = DefaultGateTries
	}
	for attempt := 1; ; attempt++ {
		m, res, err := r.prepare(ctx, wt, message, id)
		if err != nil || m == nil {
			return res, err
		}
		if opts.Gate != nil {
			green, err := r.gateRetrying(ctx, nil, opts.Gate, opts.Retries, GateTry{Attempt: attempt, Base: wt.Base, Branch: wt.Branch, BaseCommit: m.old, Tip: m.tip, Commit: m.commit})
			if err != nil {
				return MergeResult{}, err
			}
			if !green {
				return MergeResult{GateRed: true, Commit: m.commit, Attempts: attempt}, nil
			}
		}
		res, moved, err := r.land(withLock(ctx, queueLock), wt, m, seen)
		if err != nil || !moved {
			res.Attempts = attempt
			return res, err
		}
		if attempt >= tries {
			return MergeResult{Moving: fmt.Sprintf("branch %s moved while each of %d merges of %s was being checked; nothing was merged: run it again when %s is quieter", wt.Base, attempt, wt.Branch, wt.Base), Attempts: attempt}, nil
		}
	}
}

// pending is a merge computed but not landed: the merge commit of the
// branch's tip on the base's old commit.
type pending struct {
	old, tip, commit string
}

// prepare computes the merge: the merge commit, made as committer id
// (see identity), or (m nil) a result that needs no landing: up to date,
// conflicts, refused.
func (r *Repo) prepare(ctx context.Context, wt *Worktree, message string, id []string) (*pending, MergeResult, error) {
	var res MergeResult
	baseRef, branchRef := "refs/heads/"+wt.Base, wt.Branch
	if !strings.HasPrefix(branchRef, "refs/") {
		branchRef = "refs/heads/" + branchRef
	}
	var old, oldTree, tip string
	if ids, ok := revParseAll(ctx, r.Top, baseRef+"^{commit}", baseRef+"^{tree}", branchRef+"^{commit}"); ok {
		old, oldTree, tip = ids[0], ids[1], ids[2]
	} else {
		// One of them is missing (or git failed): say which.
		var ok bool
		var err error
		if old, ok, err = revParse(ctx, r.Top, baseRef+"^{commit}"); err != nil {
			return nil, res, err
		} else if !ok {
			return nil, res, fmt.Errorf("base branch %s does not exist", wt.Base)
		}
		if tip, ok, err = revParse(ctx, r.Top, branchRef+"^{commit}"); err != nil {
			return nil, res, err
		} else if !ok {
			return nil, res, fmt.Errorf("branch %s does not exist", wt.Branch)
		}
	}

	tree, conflicts, err := r.mergeTree(ctx, old, tip, wt.Base, wt.Branch)
	if err != nil {
		return nil, res, err
	}
	// A branch the base has already merges into the base's own tree
	// without conflict: only then is it worth asking git whether it is so.
	if len(conflicts) == 0 && (oldTree == "" || tree == oldTree) {
		if done, err := isAncestor(ctx, r.Top, tip, old); err != nil {
			return nil, res, err
		} else if done {
			by, err := broughtIn(ctx, r.Top, tip, old)
			return nil, MergeResult{Merged: true, UpToDate: true, Commit: by}, err
		}
	}
	if why := r.busy(baseRef); why != "" {
		return nil, MergeResult{Refused: why}, nil
	}
	if len(conflicts) > 0 {
		return nil, MergeResult{Conflicts: conflicts}, nil
	}

	out, err := run(ctx, cmd{dir: r.Top, args: append(append([]string(nil), id...), "commit-tree", tree, "-p", old, "-p", tip, "-F", "-"), stdin: message})
	if err != nil {
		return nil, res, err
	}
	return &pending{old: old, tip: tip, commit: strings.TrimSpace(out)}, res, nil
}

// land moves the base branch to the merge commit m. The caller holds the
// merge queue, the one lock that moving a base branch needs (ctx carries
// it to the git commands that move it, so a vibeteam killed while one runs
// leaves the queue held until it ends); the repository's lock is not taken,
// so the beads' worktrees are made and removed meanwhile. moved is true,
// and nothing was changed, when the base is no longer where the merge was
// computed from.
func (r *Repo) land(ctx context.Context, wt *Worktree, m *pending, seen []gitWorktree) (MergeResult, bool, error) {
	var res MergeResult
	baseRef := "refs/heads/" + wt.Base
	old := m.old
	if now, ok, err := revParse(ctx, r.Top, baseRef+"^{commit}"); err != nil {
		return res, false, err
	} else if !ok {
		return res, false, fmt.Errorf("base branch %s does not exist", wt.Base)
	} else if now != old {
		return res, true, nil
	}
	if why := r.busy(baseRef); why != "" {
		return MergeResult{Refused: why}, false, nil
	}

	holders, refused, err := r.baseHolders(ctx, wt, seen)
	if err != nil || refused != "" {
		return MergeResult{Refused: refused}, false, err
	}
	if err := ctx.Err(); err != nil {
		return res, false, err
	}
	reflog := "vibeteam: merge " + wt.Branch
	if len(holders) == 0 {
		return r.moveRef(ctx, baseRef, m, reflog)
	}
	return r.fastForwardCheckout(ctx, wt, holders[0], m, reflog)
}

// baseHolders is the checkouts that have the base checked out: the one
// seen before the queue, if it still has it, else as git says now. Several
// of them is a refusal.
func (r *Repo) baseHolders(ctx context.Context, wt *Worktree, seen []gitWorktree) ([]gitWorktree, string, error) {
	baseRef := "refs/heads/" + wt.Base
	holders := seen
	if len(seen) != 1 || seen[0].Prunable {
		holders = nil
	} else if ref, err := headRef(ctx, seen[0].Path); err != nil || ref != baseRef {
		holders = nil
	}
	if holders == nil {
		list, err := r.worktreesNow(ctx)
		if err != nil {
			return nil, "", err
		}
		holders = findBranch(list, baseRef)
	}
	if len(holders) > 1 {
		var paths []string
		for _, h := range holders {
			paths = append(paths, h.Path)
		}
		return nil, fmt.Sprintf("branch %s is checked out in several worktrees (%s): merge by hand", wt.Base, strings.Join(paths, ", ")), nil
	}
	return holders, "", nil
}

// moveRef lands m on a base checked out nowhere: the ref moves, if it is
// still where the merge was computed from.
func (r *Repo) moveRef(ctx context.Context, baseRef string, m *pending, reflog string) (MergeResult, bool, error) {
	old, commit := m.old, m.commit
	if _, err := run(ctx, cmd{dir: r.Top, args: []string{"update-ref", "-m", reflog, baseRef, commit, old}, keep: true}); err != nil {
		if now, _, rerr := revParse(context.WithoutCancel(ctx), r.Top, baseRef+"^{commit}"); rerr == nil && now != old && now != commit {
			return MergeResult{}, true, nil // moved by someone who does not queue (the user)
		}
		return MergeResult{}, false, err
	}
	return MergeResult{Merged: true, Commit: commit}, false, nil
}

// fastForwardCheckout lands m in h, the one checkout of the base.
func (r *Repo) fastForwardCheckout(ctx context.Context, wt *Worktree, h gitWorktree, m *pending, reflog string) (MergeResult, bool, error) {
	var res MergeResult
	baseRef := "refs/heads/" + wt.Base
	old, commit := m.old, m.commit
	if h.Prunable {
		return MergeResult{Refused: fmt.Sprintf("branch %s is checked out in %s, which is gone: run git worktree prune", wt.Base, h.Path)}, false, nil
	}
	// The merge commit has the base as its first parent, so for the
	// checkout it is a fast-forward: git updates index and files from the
	// base's tree to the merged one, carrying local changes to files the
	// merge does not change, and refuses when it would overwrite local
	// changes or untracked files (--no-overwrite-ignore: ignored ones
	// too). It never stashes (--no-autostash) and never conflicts. If the
	// branch moved since (a commit by the user), it is no longer a
	// fast-forward and git refuses too.
	if cur, err := headRef(ctx, h.Path); err != nil || cur != baseRef {
		return MergeResult{Refused: fmt.Sprintf("the checkout %s switched away from %s while merging; nothing was changed: merge again", h.Path, wt.Base)}, false, nil
	}
	_, err := run(ctx, cmd{
		dir:  h.Path,
		args: []string{"merge", "--ff-only", "--no-autostash", "--no-overwrite-ignore", "--no-verify-signatures", "--no-stat", "--quiet", commit},
		env:  []string{"GIT_REFLOG_ACTION=" + reflog},
		keep: true,
	})
	now, _, rerr := revParse(context.WithoutCancel(ctx), r.Top, baseRef)
	if err != nil {
		// A fast-forward moves the branch to the merge commit or leaves
		// it: anywhere else, git refused (the base may also have moved
		// under it, a commit by the user: no longer a fast-forward, and
		// the merge is computed again).
		if rerr == nil && now != commit {
			if now != old {
				return res, true, nil
			}
			var ge *GitError
			msg := err.Error()
			if errors.As(err, &ge) && strings.TrimSpace(ge.Stderr) != "" {
				msg = strings.TrimSpace(ge.Stderr)
			}
			return MergeResult{Refused: msg}, false, nil
		}
		return res, false, err
	}
	if rerr != nil {
		return res, false, rerr
	}
	if now != commit {
		return res, false, fmt.Errorf("git merge in %s left %s at %s, not at the merge commit %s", h.Path, wt.Base, now, commit)
	}
	return MergeResult{Merged: true, Commit: commit}, false, nil
}

// mergeTree computes the merge of tip into old without touching any ref,
// index or working tree: the merged tree, or the conflicts.
func (r *Repo) mergeTree(ctx context.Context, old, tip, baseName, branchName string) (string, []Conflict, error) {
	out, err := git(ctx, r.Top, "merge-tree", "--write-tree", "--name-only", "--messages", "-z", old, tip)
	if err != nil && exitCode(err) != 1 {
		return "", nil, err
	}
	fields := strings.Split(out, "\x00")
	tree := fields[0]
	if err == nil {
		if tree == "" {
			return "", nil, fmt.Errorf("git merge-tree printed no tree")
		}
		return tree, nil, nil
	}
	// Exit 1: conflicts. Conflicted paths up to an empty field, then the
	// messages: <n> NUL <path>... NUL <type> NUL <message> NUL.
	var paths []string
	i := 1
	for ; i < len(fields) && fields[i] != ""; i++ {
		paths = append(paths, fields[i])
	}
	msgs := map[string][]string{}
	for i++; i < len(fields); {
		n, err := strconv.Atoi(fields[i])
		if err != nil || i+n+2 >= len(fields) {
			break
		}
		kind, text := fields[i+n+1], strings.TrimSpace(fields[i+n+2])
		if strings.HasPrefix(kind, "CONFLICT") {
			for _, p := range fields[i+1 : i+1+n] {
				msgs[p] = append(msgs[p], text)
			}
		}
		i += n + 3
	}
	if len(paths) == 0 {
		// Exit 1 without a conflicted path: report what git said.
		var all []string
		for _, m := range msgs {
			all = append(all, m...)
		}
		return "", nil, fmt.Errorf("git merge-tree found conflicts it did not name: %s", strings.Join(all, "; "))
	}
	budget := maxConflictBytes
	var conflicts []Conflict
	for _, p := range paths {
		c := Conflict{Path: p, Message: strings.Join(msgs[p], "\n")}
		if budget > 0 {
			if blob, err := git(ctx, r.Top, "cat-file", "blob", tree+":"+p); err == nil && !strings.Contains(blob, "\x00") {
				c.Hunks = hunks(blob, old, tip, baseName, branchName)
			}
		}
		if c.Hunks == "" {
			c.Hunks = c.Message
		}
		if len(c.Hunks) > budget {
			cut := c.Hunks[:max(budget, 0)]
			if j := strings.LastIndexByte(cut, '\n'); j >= 0 {
				cut = cut[:j+1]
			} else {
				cut = ""
			}
			c.Hunks = cut + "… (not shown: the conflict report is long enough)\n"
		}
		budget -= len(c.Hunks)
		conflicts = append(conflicts, c)
	}
	return tree, conflicts, nil
}

// hunks extracts the conflict-marked regions of a merged file, with a few
// lines of context, the commit ids in the markers replaced by branch names.
func hunks(content, old, tip, baseName, branchName string) string {
	lines := strings.SplitAfter(content, "\n")
	type span struct{ from, to int }
	var spans []span
	start := -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "<<<<<<< ") || strings.TrimRight(l, "\r\n") == "<<<<<<<":
			if start < 0 {
				start = i
			}
			lines[i] = relabel(l, "<<<<<<< ", old, baseName)
		case strings.HasPrefix(l, ">>>>>>> ") || strings.TrimRight(l, "\r\n") == ">>>>>>>":
			lines[i] = relabel(l, ">>>>>>> ", tip, branchName)
			if start >= 0 {
				spans = append(spans, span{max(start-hunkContext, 0), min(i+hunkContext, len(lines)-1)})
				start = -1
			}
		}
	}
	var b strings.Builder
	n, last := 0, -1
	for _, s := range spans {
		if s.from <= last {
			s.from = last + 1
		} else if last >= 0 {
			b.WriteString("…\n")
		}
		for i := s.from; i <= s.to; i++ {
			if n == maxHunkLines {
				b.WriteString("… (more conflict lines not shown)\n")
				return b.String()
			}
			b.WriteString(lines[i])
			if !strings.HasSuffix(lines[i], "\n") {
				b.WriteString("\n")
			}
			n++
		}
		last = s.to
	}
	return b.String()
}

func relabel(line, marker, id, name string) string {
	if rest, ok := strings.CutPrefix(line, marker+id); ok {
		return marker + name + rest
	}
	return line
}

// BranchRef resolves a branch as git would, a local one (feature) or a
// remote-tracking one (origin/feature), to its full ref name, which a
// Worktree's Branch may be for a merge of a branch no worktree has
// (vibeteam land).
func (r *Repo) BranchRef(ctx context.Context, name string) (string, error) {
	if strings.HasPrefix(name, "-") {
		return "", fmt.Errorf("%q is not a branch", name)
	}
	out, err := git(ctx, r.Top, "rev-parse", "--verify", "--quiet", "--symbolic-full-name", "--end-of-options", name)
	ref := strings.TrimSpace(out)
	switch {
	case err != nil && exitCode(err) != 1:
		return "", err
	case ref == "":
		return "", fmt.Errorf("no branch %s in %s (git fetch it first?)", name, r.Top)
	case !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/remotes/"):
		return "", fmt.Errorf("%s is %s, not a branch", name, ref)
	}
	return ref, nil
}

// Landed reports whether the base branch has the worktree's branch already
// (its tip is an ancestor of the base's), and the commit that brought it
// in then (see broughtIn): what a merge that was under way when vibeteam
// was stopped did.
func (r *Repo) Landed(ctx context.Context, wt *Worktree) (string, bool, error) {
	if wt == nil || wt.Branch == "" || wt.Base == "" {
		return "", false, errors.New("no worktree")
	}
	base, ok, err := revParse(ctx, r.Top, "refs/heads/"+wt.Base+"^{commit}")
	if err != nil || !ok {
		return "", false, err
	}
	tip, ok, err := revParse(ctx, r.Top, "refs/heads/"+wt.Branch+"^{commit}")
	if err != nil || !ok {
		return "", false, err
	}
	if tip == base {
		return "", false, nil // nothing of the bead's was ever committed
	}
	landed, err := isAncestor(ctx, r.Top, tip, base)
	if err != nil || !landed {
		return "", false, err
	}
	by, err := broughtIn(ctx, r.Top, tip, base)
	return by, err == nil, err
}

// broughtIn is the commit of base's first-parent history that brought tip
// (an ancestor of base) into it: the oldest one that has tip, the merge of
// its branch, or tip itself when base went through it (a fast-forward).
// It is what a session records as its merge when its branch is found in
// the base already: the base's tip may be a later bead's merge by then.
func broughtIn(ctx context.Context, dir, tip, base string) (string, error) {
	if tip == base {
		return tip, nil
	}
	// base's first-parent line down to the first commit tip has (newest
	// first), and the commits that descend from tip: the oldest of the
	// first that is one of the second brought it in. Two walks of
	// tip..base only: --ancestry-path is not trusted to follow second
	// parents under --first-parent in every git.
	line, err := git(ctx, dir, "rev-list", "--first-parent", "--parents", tip+".."+base)
	if err != nil {
		return "", err
	}
	desc, err := git(ctx, dir, "rev-list", "--ancestry-path", tip+".."+base)
	if err != nil {
		return "", err
	}
	after := map[string]bool{}
	for _, c := range strings.Fields(desc) {
		after[c] = true
	}
	by := base
	for _, l := range strings.Split(strings.TrimSpace(line), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !after[f[0]] {
			break
		}
		by = f[0]
		if len(f) > 1 && f[1] == tip {
			return tip, nil // base's line goes through tip itself
		}
	}
	return by, nil
}
