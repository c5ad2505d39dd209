package score

import (
	"fmt"
	"regexp"
	"strings"
)

// stripThinking drops a reasoning model's <think>…</think> preamble: only the text after the last
// closing tag is the reply.
func stripThinking(raw string) string {
	if i := strings.LastIndex(raw, "</think>"); i >= 0 {
		return raw[i+len("</think>"):]
	}
	return raw
}

var (
	enVerdictRE = regexp.MustCompile(`(?i)\b(not\s+|in)?correct\b`)
	zhVerdictRE = regexp.MustCompile("结论[\\s*#:：【\\[「『\"'“”‘’]*(正确|错误)")
	zhAnswerRE  = regexp.MustCompile(`最终答案[*]*[:：]*[*]*\s*([^\n]*)`)
	decorations = " \t\r\n*_`\"'“”‘’.。!！[]【】()（）:："
)

// Error messages never quote the reply: for sensitive benchmarks it may restate the reference answer,
// and the raw reply is kept in Verdict.JudgeOutput anyway.

// ParseCorrectIncorrect reads the verdict of a "Correct/Incorrect" judge reply. It accepts the bare
// word in any case and with markdown, quotes, brackets or a trailing period, and longer replies whose
// every verdict word agrees ("correct", or "incorrect"/"not correct"); a reply that is exactly 正确 or
// 错误 is read too. A reply with no verdict word or with contradicting ones is malformed: the error
// wraps ErrMalformedVerdict.
func ParseCorrectIncorrect(raw string) (bool, error) {
	reply := strings.Trim(stripThinking(raw), decorations)
	switch reply {
	case "正确":
		return true, nil
	case "错误":
		return false, nil
	}
	matches := enVerdictRE.FindAllStringSubmatch(reply, -1)
	if len(matches) == 0 {
		return false, fmt.Errorf("%w: no Correct/Incorrect", ErrMalformedVerdict)
	}
	verdict := matches[0][1] == ""
	for _, m := range matches[1:] {
		if (m[1] == "") != verdict {
			return false, fmt.Errorf("%w: both Correct and Incorrect", ErrMalformedVerdict)
		}
	}
	return verdict, nil
}

// ParseXBenchVerdict reads an xbench judge reply: the verdict after the last "结论" (正确 or 错误, with
// ASCII or full-width colons, markdown or brackets around it) and the judge's "最终答案" line. A reply
// without a 结论 verdict is malformed: the error wraps ErrMalformedVerdict. (The reference
// implementation scores such replies 0; the project counts them as judge errors instead.)
func ParseXBenchVerdict(raw string) (correct bool, extracted string, err error) {
	reply := stripThinking(raw)
	if m := zhAnswerRE.FindStringSubmatch(reply); m != nil {
		extracted = strings.TrimSpace(m[1])
	}
	all := zhVerdictRE.FindAllStringSubmatch(reply, -1)
	if len(all) == 0 {
		return false, extracted, fmt.Errorf("%w: no 结论 正确/错误", ErrMalformedVerdict)
	}
	return all[len(all)-1][1] == "正确", extracted, nil
}
