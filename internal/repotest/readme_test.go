package repotest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeLink matches a link to a place in the same document: [text](#anchor).
var readmeLink = regexp.MustCompile(`\]\(#([^)\s]+)\)`)

// readmeAnchorID matches an explicit anchor: <a id="name"></a>.
var readmeAnchorID = regexp.MustCompile(`<a id="([^"]+)"></a>`)

// headingSlug is the anchor GitHub gives a Markdown heading: the text lowercased, every character
// but letters, digits, spaces, hyphens and underscores dropped, spaces turned into hyphens.
func headingSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// brokenLinks reports every in-document link of the Markdown text whose anchor is neither a
// heading's (outside code blocks; a repeated heading's second anchor gets "-1", as on GitHub) nor
// an explicit <a id>.
func brokenLinks(name, text string) []finding {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	lines := strings.Split(text, "\n")
	for _, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			slug := headingSlug(h)
			if n := seen[slug]; n > 0 {
				anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range readmeAnchorID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
	}
	var found []finding
	for i, line := range lines {
		for _, m := range readmeLink.FindAllStringSubmatch(line, -1) {
			if !anchors[m[1]] {
				found = append(found, finding{name, i + 1, "links to #" + m[1] + ", which no heading or anchor names"})
			}
		}
	}
	return found
}

// TestReadmeLinksResolve: every link from README.md to a place in itself lands on a heading or an
// anchor, so the contents and the cross-references keep working as sections are renamed.
func TestReadmeLinksResolve(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readmeLink.FindAllString(string(data), -1)); n < 10 {
		t.Fatalf("README.md has %d in-document links: the pattern is wrong", n)
	}
	for _, f := range brokenLinks("README.md", string(data)) {
		t.Error(f)
	}
}

// The rule finds a link to nothing, a link to a heading inside a code block, and a repeated
// heading's first anchor taken for its second; it passes headings, their GitHub slugs and <a id>s.
func TestBrokenLinksFinds(t *testing.T) {
	text := "# The item's states (Soroban)\n" +
		"## Tracing: X-Ray or `OpenTelemetry`\n" +
		"### Twice\n### Twice\n" +
		"```sh\n# not a heading\n```\n" +
		`| <a id="problem-x"></a>` + "`X` |\n" +
		"[a](#the-items-states-soroban) [b](#tracing-x-ray-or-opentelemetry) [c](#twice-1) [d](#problem-x)\n" +
		"[e](#nowhere) [f](#not-a-heading) [g](#twice-2)\n"
	var got []string
	for _, f := range brokenLinks("R.md", text) {
		got = append(got, f.String())
	}
	want := []string{
		"R.md:10: links to #nowhere, which no heading or anchor names",
		"R.md:10: links to #not-a-heading, which no heading or anchor names",
		"R.md:10: links to #twice-2, which no heading or anchor names",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
