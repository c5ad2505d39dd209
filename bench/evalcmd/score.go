package evalcmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/mgrpo/mgrpo/bench/score"
)

// ScoreOptions are the flags of `mgrpo eval score`.
type ScoreOptions struct {
	// Benchmark picks the published protocol: gaia, webwalkerqa, xbench or jsonl (--benchmark).
	Benchmark string
	// Method is auto, exact, judge or cascade (--scorer); empty means auto.
	Method string
	// Prediction, Answer and Question score one case (--prediction, --answer, --question).
	Prediction string
	Answer     string
	Question   string
	// File is a JSONL file of cases to rescore, "-" for stdin (--file). When set, the single-case
	// fields are ignored.
	File string
	// Judge answers judge prompts; nil when no judge endpoint was configured (--judge-url,
	// --judge-model, --judge-key in cmd).
	Judge score.ChatModel
	// Concurrency bounds the cases scored at once in file mode (--concurrency); 0 means 8.
	Concurrency int
}

// Score runs `mgrpo eval score`. With File empty it scores one case and prints "correct" or
// "incorrect" on stdout. With File set it reads JSON Lines objects with "prediction" and "answer"
// (and optionally "question") and writes each line back, in order, with "correct" set (true, false,
// or null when the judge gave no verdict), "judge_output" when a judge was asked and "judge_error"
// when it failed; other fields are kept as they were. The verdicts never make Score fail: it returns
// an error only for bad input (naming the line), a bad configuration, a cancelled context, or, in
// single-case mode, a judge error (there is no verdict to print).
func Score(ctx context.Context, opts ScoreOptions, stdin io.Reader, stdout io.Writer) error {
	sc, err := score.ForBenchmark(opts.Benchmark, opts.Method, opts.Judge)
	if err != nil {
		return fmt.Errorf("eval score: %w", err)
	}
	if opts.File == "" {
		v, err := sc.Score(ctx, score.Case{Question: opts.Question, Answer: opts.Answer, Prediction: opts.Prediction})
		if err != nil {
			return fmt.Errorf("eval score: %w", err)
		}
		word := "incorrect"
		if v.Correct {
			word = "correct"
		}
		_, err = fmt.Fprintln(stdout, word)
		return err
	}
	in := stdin
	name := "stdin"
	if opts.File != "-" {
		f, err := os.Open(opts.File)
		if err != nil {
			return fmt.Errorf("eval score: %w", err)
		}
		defer f.Close()
		in, name = f, opts.File
	}
	return scoreLines(ctx, sc, in, name, stdout, opts.Concurrency)
}

type scoreLine struct {
	line int
	obj  *object // nil for a blank line, written back as is
	c    score.Case
}

func scoreLines(ctx context.Context, sc score.Scorer, in io.Reader, name string, out io.Writer, limit int) error {
	var lines []scoreLine
	s := bufio.NewScanner(in)
	s.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for n := 1; s.Scan(); n++ {
		b := bytes.TrimSpace(s.Bytes())
		if len(b) == 0 {
			lines = append(lines, scoreLine{line: n})
			continue
		}
		obj, err := parseObject(b)
		if err != nil {
			return fmt.Errorf("eval score: %s:%d: %w", name, n, err)
		}
		c, err := caseOf(obj)
		if err != nil {
			return fmt.Errorf("eval score: %s:%d: %w", name, n, err)
		}
		lines = append(lines, scoreLine{line: n, obj: obj, c: c})
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("eval score: read %s: %w", name, err)
	}
	if limit <= 0 {
		limit = 8
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range lines {
		if lines[i].obj == nil {
			continue
		}
		l := &lines[i]
		g.Go(func() error {
			v, err := sc.Score(gctx, l.c)
			if err != nil && !errors.Is(err, score.ErrJudge) {
				return fmt.Errorf("eval score: %s:%d: %w", name, l.line, err)
			}
			return annotate(l.obj, v, err)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	for _, l := range lines {
		if l.obj != nil {
			w.Write(l.obj.marshal())
		}
		w.WriteByte('\n')
	}
	return w.Flush()
}

func caseOf(obj *object) (score.Case, error) {
	var c score.Case
	var present bool
	var err error
	if c.Prediction, present, err = obj.text("prediction"); err != nil {
		return c, err
	} else if !present {
		return c, errors.New(`missing "prediction"`)
	}
	if c.Answer, present, err = obj.text("answer"); err != nil {
		return c, err
	} else if !present {
		return c, errors.New(`missing "answer"`)
	}
	if c.Question, _, err = obj.text("question"); err != nil {
		return c, err
	}
	return c, nil
}

// annotate writes a verdict into a line; judgeErr is nil or wraps score.ErrJudge.
func annotate(obj *object, v score.Verdict, judgeErr error) error {
	var correct any = v.Correct
	if judgeErr != nil {
		correct = nil
		if err := obj.setValue("judge_error", judgeErr.Error()); err != nil {
			return err
		}
	} else {
		obj.remove("judge_error")
	}
	if err := obj.setValue("correct", correct); err != nil {
		return err
	}
	if len(v.JudgeOutput) > 0 {
		return obj.setValue("judge_output", v.JudgeOutput)
	}
	obj.remove("judge_output")
	return nil
}
