package run

import "github.com/mgrpo/mgrpo/llm"

// checkParsers refuses a role's parser the client does not implement,
// naming the key and its flag.
func (c Config) checkParsers(p *problems) {
	for _, r := range []struct {
		key, flag, v string
	}{
		{"planner.parser", "planner-parser", c.Planner.Parser},
		{"executor.parser", "executor-parser", c.Executor.Parser},
		{"reasoner.parser", "", c.Reasoner.Parser},
		{"judge.parser", "judge-parser", c.Judge.Parser},
	} {
		if r.v == "" {
			continue
		}
		if _, err := llm.ParseParser(r.v); err != nil {
			p.add(r.key, r.flag, "%v", err)
		}
	}
}
