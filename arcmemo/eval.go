package arcmemo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// jsonDetail is a Detail/Result object; every field but these is ignored,
// and minimal objects (only is_train, pair_idx, correct) are accepted.
type jsonDetail struct {
	PairIdx *int  `json:"pair_idx"`
	Correct *bool `json:"correct"`
}

func convertDetails(in []jsonDetail) []Detail {
	out := make([]Detail, 0, len(in))
	for _, d := range in {
		x := Detail{PairIdx: -1}
		if d.PairIdx != nil {
			x.PairIdx = *d.PairIdx
		}
		if d.Correct != nil {
			x.Correct = *d.Correct
		}
		out = append(out, x)
	}
	return out
}

// evalRecord is one line of mem2's eval_records.jsonl.
type evalRecord struct {
	ProblemUID   string       `json:"problem_uid"`
	AttemptIdx   *int         `json:"attempt_idx"`
	IsCorrect    bool         `json:"is_correct"`
	TrainDetails []jsonDetail `json:"train_details"`
	TestDetails  []jsonDetail `json:"test_details"`
	Metadata     struct {
		ParsingError  *string `json:"parsing_error"`
		GlobalStepIdx *int    `json:"global_step_idx"`
		PassIdx       *int    `json:"pass_idx"`
	} `json:"metadata"`
}

// ParseEvalRecords reads eval_records.jsonl. Every line must be one JSON
// object; a truncated or malformed line is an error naming name and the
// line, because a half-written file means the run did not finish writing.
func ParseEvalRecords(r io.Reader, name string) ([]Attempt, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var out []Attempt
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("unable to read %s: %w", name, err)
		}
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		var rec evalRecord
		if perr := json.Unmarshal(body, &rec); perr != nil {
			what := "is not a JSON object"
			if err == io.EOF && !bytes.HasSuffix(line, []byte("\n")) {
				what = "is truncated (no final newline)"
			}
			return nil, badInput("%s line %d %s (%v): the run did not finish writing it; rerun or restore the file", name, lineNo, what, shortErr(perr))
		}
		if rec.ProblemUID == "" {
			return nil, badInput("%s line %d has no problem_uid: not a mem2 eval record", name, lineNo)
		}
		a := Attempt{Puzzle: rec.ProblemUID, Pass: -1, IsCorrect: rec.IsCorrect,
			Train: convertDetails(rec.TrainDetails), Test: convertDetails(rec.TestDetails)}
		if rec.Metadata.PassIdx != nil {
			a.Pass = *rec.Metadata.PassIdx
		}
		switch {
		case rec.Metadata.GlobalStepIdx != nil:
			a.Step = *rec.Metadata.GlobalStepIdx
		case rec.AttemptIdx != nil:
			a.Step = *rec.AttemptIdx
		}
		if rec.Metadata.ParsingError != nil {
			a.ParseError = *rec.Metadata.ParsingError
			if a.ParseError == "" {
				a.ParseError = "parsing error"
			}
		}
		out = append(out, a)
	}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}
