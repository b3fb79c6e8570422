package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RemoteTries bounds how many times a remote batch is fetched, merged and
// gated again because its push was rejected (another machine landed
// first). Each try follows a landing elsewhere, so it is high.
const RemoteTries = 50

// CheckRemote is an error unless name is one of the repository's remotes.
func (r *Repo) CheckRemote(ctx context.Context, name string) error {
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t\n:") {
		return fmt.Errorf("%q is not a remote's name", name)
	}
	out, err := git(ctx, r.Top, "remote")
	if err != nil {
		return err
	}
	var names []string
	for _, n := range strings.Fields(out) {
		if n == name {
			return nil
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return fmt.Errorf("no remote %s in %s: it has none (git remote add %s URL)", name, r.Top, name)
	}
	return fmt.Errorf("no remote %s in %s; its remotes: %s", name, r.Top, strings.Join(names, ", "))
}

// trackingRef is where the remote's copy of base is kept locally.
func trackingRef(remote, base string) string {
	return "refs/remotes/" + remote + "/" + base
}

// Fetch brings the remote's base into its tracking ref and returns its
// commit.
func (r *Repo) Fetch(ctx context.Context, remote, base string) (string, error) {
	ref := trackingRef(remote, base)
	// The + is for the local tracking ref only; nothing is ever pushed so.
	if _, err := run(ctx, cmd{dir: r.Top, args: []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+refs/heads/" + base + ":" + ref}, keep: true}); err != nil {
		return "", fmt.Errorf("fetch %s from %s: %w", base, remote, err)
	}
	tip, ok, err := revParse(ctx, r.Top, ref+"^{commit}")
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("remote %s has no branch %s", remote, base)
	}
	return tip, nil
}

// followRemote fast-forwards the local base to tip when it is behind it,
// so that new worktrees and conflict resolutions start from what the
// remote has; anything else (ahead, diverged, a checkout whose local
// changes are in the way) leaves it. The caller holds the merge queue.
func (r *Repo) followRemote(ctx context.Context, base, tip string, seen []gitWorktree) {
	old, ok, err := revParse(ctx, r.Top, "refs/heads/"+base+"^{commit}")
	if err != nil || !ok || old == tip {
		return
	}
	if behind, err := isAncestor(ctx, r.Top, old, tip); err != nil || !behind {
		return
	}
	_, _, _ = r.land(ctx, &Worktree{Base: base, Branch: "the remote's " + base}, &pending{old: old, tip: tip, commit: tip}, seen)
}

// rejectedError is a push of the base the remote refused: git's summary
// ("[rejected] (fetch first)", "[remote rejected] (failed to update ref)"
// when another push won the race, or a hook's refusal).
type rejectedError struct{ summary string }

func (e *rejectedError) Error() string { return "the push was rejected: " + e.summary }

// push lands commit on the remote's base, as a fast-forward only: git
// refuses a push that is not one, and no push here is forced. The beads'
// branches go with it, each on its own (a branch refused does not stop
// the landing). A *rejectedError: the remote refused it; nothing of its
// base changed.
func (r *Repo) push(ctx context.Context, remote, base, commit string, branches []string) error {
	dst := "refs/heads/" + base
	args := []string{"push", "--porcelain", "--no-verify", remote, commit + ":" + dst}
	for _, b := range branches {
		if !strings.HasPrefix(b, "refs/") {
			b = "refs/heads/" + b
		}
		args = append(args, b+":"+b)
	}
	out, err := run(ctx, cmd{dir: r.Top, args: args, keep: true})
	// --porcelain: one line a ref, "FLAG\tFROM:TO\tSUMMARY"; the flag is
	// ' ' (fast-forward), '*' (new), '=' (up to date), '!' (rejected).
	for _, l := range strings.Split(out, "\n") {
		flag, rest, ok := strings.Cut(l, "\t")
		if !ok || len(flag) != 1 {
			continue
		}
		refs, _, _ := strings.Cut(rest, "\t")
		if !strings.HasSuffix(refs, ":"+dst) {
			continue
		}
		switch flag {
		case " ", "*", "=":
			// Git says the tracking ref follows; made sure of here.
			_, _ = run(ctx, cmd{dir: r.Top, args: []string{"update-ref", trackingRef(remote, base), commit}, keep: true})
			return nil
		case "!":
			_, summary, _ := strings.Cut(rest, "\t")
			return &rejectedError{summary: strings.TrimSpace(summary)}
		}
	}
	if err == nil {
		return fmt.Errorf("git push to %s said nothing of %s:\n%s", remote, dst, out)
	}
	return fmt.Errorf("push to %s: %w", remote, err)
}

// SyncRemote fetches the remote's base and brings the local base up to it
// when it is behind (see Fetch), holding the merge queue; base "" is the
// current branch. It returns the remote base's commit.
func (r *Repo) SyncRemote(ctx context.Context, remote, base string) (string, error) {
	if base == "" {
		b, err := r.CurrentBranch(ctx)
		if err != nil {
			return "", err
		}
		base = b
	}
	var seen []gitWorktree
	if list, err := r.worktreesNow(ctx); err == nil {
		seen = findBranch(list, "refs/heads/"+base)
	}
	unlock, lock, err := r.queue(ctx, nil)
	if err != nil {
		return "", err
	}
	defer unlock()
	tip, err := r.Fetch(ctx, remote, base)
	if err != nil {
		return "", err
	}
	r.followRemote(withLock(ctx, lock), base, tip, seen)
	return tip, nil
}

// LandedOn is Landed on the remote's base, as just fetched: whether the
// worktree's branch is in it (a push that was accepted before vibeteam
// was stopped).
func (r *Repo) LandedOn(ctx context.Context, wt *Worktree, remote string) (string, bool, error) {
	if wt == nil || wt.Branch == "" || wt.Base == "" {
		return "", false, errors.New("no worktree")
	}
	base, err := r.Fetch(ctx, remote, wt.Base)
	if err != nil {
		return "", false, err
	}
	tip, ok, err := revParse(ctx, r.Top, "refs/heads/"+wt.Branch+"^{commit}")
	if err != nil || !ok {
		return "", false, err
	}
	if tip == base {
		return "", false, nil
	}
	landed, err := isAncestor(ctx, r.Top, tip, base)
	if err != nil || !landed {
		return "", false, err
	}
	return base, true, nil
}
