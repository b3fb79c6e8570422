package agentstream

import (
	"regexp"
	"strings"
)

// QuestionKind is what an agent's question asks for.
type QuestionKind string

const (
	AskPermission QuestionKind = "permission" // may it do something: yes or no
	AskChoice     QuestionKind = "choice"     // one of the options it lists
	AskText       QuestionKind = "text"       // anything: the person's own words
)

// Question is a question an agent's final message ends with.
type Question struct {
	Kind    QuestionKind `json:"kind"`
	Text    string       `json:"text"`              // the question, as the agent put it
	Options []string     `json:"options,omitempty"` // suggested answers (choice: the listed options; permission: yes, no)
}

var (
	// A courtesy at the end of a finished job is not a question.
	courtesy = regexp.MustCompile(`(?i)\b(anything else|let me know if|if you (need|want|have|would like)|further (questions|help|assistance)|happy to help|feel free to)\b`)
	// Asking leave: the agent wants a yes or a no before it does something.
	permissionAsk = regexp.MustCompile(`(?i)^(shall|should|may|can|could) i\b|^(do|would) you (want|like) me to\b|^is it (ok|okay|alright|fine)\b|\b(permission|approve|approval|allow me|go ahead|proceed)\b`)
	// A listed option: "1. foo", "2) bar", "- baz", "* qux", "a) quux".
	optionLine = regexp.MustCompile(`^\s*(?:\d{1,2}[.)]|[a-zA-Z][)]|[-*•])\s+(.+)$`)
	// Markdown around a line: emphasis, headings, quotes.
	markup = regexp.MustCompile(`[*` + "`" + `]+|^[\s>#]+`)
)

// DetectQuestion finds the question a final message ends with: its last
// paragraph asks the person something (a sentence ending in "?", possibly
// with options listed around it), and is not a courtesy such as "Let me
// know if you need anything else." nil when the message does not end
// with a question: the agent is done.
func DetectQuestion(final string) *Question {
	paras := paragraphs(final)
	if len(paras) == 0 {
		return nil
	}
	last := paras[len(paras)-1]
	var question string
	var options []string
	for _, l := range last {
		if m := optionLine.FindStringSubmatch(l); m != nil {
			options = append(options, clean(m[1]))
			continue
		}
		if strings.HasSuffix(clean(l), "?") {
			question = clean(l)
		}
	}
	// Options listed in the paragraph before, then a question alone:
	// "1. Postgres\n2. SQLite\n\nWhich one should I use?"
	if question != "" && len(options) == 0 && len(paras) > 1 {
		prev := paras[len(paras)-2]
		all := true
		var listed []string
		for _, l := range prev {
			m := optionLine.FindStringSubmatch(l)
			if m == nil {
				all = false
				break
			}
			listed = append(listed, clean(m[1]))
		}
		if all {
			options = listed
		}
	}
	// The question line may come before its options in the same
	// paragraph ("Which database?\n1. Postgres\n2. SQLite"), or in the
	// paragraph before them ("Which one do you prefer?\n\n1. A\n2. B").
	if question == "" && len(options) > 0 {
		for i := len(paras) - 2; i >= 0 && i >= len(paras)-2; i-- {
			for _, l := range paras[i] {
				if strings.HasSuffix(clean(l), "?") {
					question = clean(l)
				}
			}
		}
	}
	if question == "" || courtesy.MatchString(question) {
		return nil
	}
	sentence := lastSentence(question)
	switch {
	case len(options) >= 2:
		return &Question{Kind: AskChoice, Text: question, Options: options}
	case permissionAsk.MatchString(sentence):
		return &Question{Kind: AskPermission, Text: question, Options: []string{"yes", "no"}}
	}
	return &Question{Kind: AskText, Text: question}
}

// paragraphs splits text into paragraphs of non-empty lines, outside code
// blocks (a question quoted in code is not asked).
func paragraphs(text string) [][]string {
	var out [][]string
	var cur []string
	inCode := false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			flush()
			continue
		}
		if inCode {
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	if !inCode {
		flush()
	}
	return out
}

func clean(l string) string {
	return strings.TrimSpace(markup.ReplaceAllString(l, ""))
}

// lastSentence is the sentence a line ends with: "I made the change. Should
// I also update the docs?" asks "Should I also update the docs?".
func lastSentence(l string) string {
	l = strings.TrimSuffix(l, "?")
	if i := strings.LastIndexAny(l, ".!:;"); i >= 0 {
		l = l[i+1:]
	}
	return strings.TrimSpace(l)
}
