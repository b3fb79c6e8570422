package agentstream

import (
	"reflect"
	"testing"
)

func TestDetectQuestion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		text string
		want *Question
	}{
		{"done", "Done: the file is there.", nil},
		{"empty", "", nil},
		{"courtesy", "I created the file.\n\nLet me know if you need anything else?", nil},
		{"courtesy 2", "All tests pass. Is there anything else you'd like me to do?", nil},
		{"question in code only", "Here is the prompt:\n```\nShould I proceed?\n```\nDone.", nil},
		{"question mid-text, done at the end", "Should I use tabs? I used spaces, as the file does.\n\nDone.", nil},
		{"permission", "The migration drops a column.\n\nShould I run it against the dev database?",
			&Question{Kind: AskPermission, Text: "Should I run it against the dev database?", Options: []string{"yes", "no"}}},
		{"would you like me to", "I found the bug. Would you like me to fix it now?",
			&Question{Kind: AskPermission, Text: "I found the bug. Would you like me to fix it now?", Options: []string{"yes", "no"}}},
		{"choice after", "There are two ways.\n\nWhich database should I use?\n1. Postgres\n2. SQLite",
			&Question{Kind: AskChoice, Text: "Which database should I use?", Options: []string{"Postgres", "SQLite"}}},
		{"choice before", "Options:\n\n- **Postgres** (what prod runs)\n- SQLite\n\nWhich one do you prefer?",
			&Question{Kind: AskChoice, Text: "Which one do you prefer?", Options: []string{"Postgres (what prod runs)", "SQLite"}}},
		{"choice in next paragraph", "Which one do you prefer?\n\n1) A\n2) B",
			&Question{Kind: AskChoice, Text: "Which one do you prefer?", Options: []string{"A", "B"}}},
		{"free text", "I need one thing from you.\n\n**What should the new endpoint be called?**",
			&Question{Kind: AskText, Text: "What should the new endpoint be called?"}},
	} {
		got := DetectQuestion(c.text)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
