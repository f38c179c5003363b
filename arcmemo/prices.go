package arcmemo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Price is what one model costs, in dollars per million tokens. Reasoning
// tokens are part of a provider's output tokens; when Reasoning is set
// they are charged at it and the rest of the output at Output, otherwise
// all output tokens at Output.
type Price struct {
	Input     float64  `json:"input"`
	Output    float64  `json:"output"`
	Reasoning *float64 `json:"reasoning,omitempty"`
}

// Prices maps a model name (as provider_usage.json names it) to its price.
type Prices map[string]Price

// MaxPricesFile bounds a price table.
const MaxPricesFile = 1 << 20

// ParsePrices reads a price table, JSON or YAML:
//
//	{"o4-mini": {"input": 1.1, "output": 4.4, "reasoning": 4.4}}
//
//	o4-mini:
//	  input: 1.1
//	  output: 4.4
//
// Every model needs input and output; prices are finite and >= 0; any
// other field is refused, naming it.
func ParsePrices(b []byte, name string) (Prices, error) {
	raw := map[string]map[string]float64{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var m map[string]map[string]json.Number
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, badInput("%s is not a price table (%v): write {\"MODEL\": {\"input\": $/1M, \"output\": $/1M, \"reasoning\": $/1M}}", name, shortErr(err))
		}
		for model, fields := range m {
			raw[model] = map[string]float64{}
			for k, v := range fields {
				f, err := v.Float64()
				if err != nil {
					return nil, badInput("%s: %s.%s is not a number", name, model, k)
				}
				raw[model][k] = f
			}
		}
	} else {
		var err error
		if raw, err = parsePriceYAML(b, name); err != nil {
			return nil, err
		}
	}
	if len(raw) == 0 {
		return nil, badInput("%s has no model prices: write one block per model with input and output ($ per 1M tokens)", name)
	}
	out := Prices{}
	models := make([]string, 0, len(raw))
	for m := range raw {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, model := range models {
		fields := raw[model]
		var p Price
		_, hasIn := fields["input"]
		_, hasOut := fields["output"]
		if !hasIn || !hasOut {
			return nil, badInput("%s: model %q needs both input and output ($ per 1M tokens)", name, model)
		}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := fields[k]
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, badInput("%s: %s.%s is %v: a price is a finite number >= 0", name, model, k, v)
			}
			switch k {
			case "input":
				p.Input = v
			case "output":
				p.Output = v
			case "reasoning":
				r := v
				p.Reasoning = &r
			default:
				return nil, badInput("%s: model %q has an unknown field %q (known: input, output, reasoning)", name, model, k)
			}
		}
		out[model] = p
	}
	return out, nil
}

// parsePriceYAML reads the two-level block mapping of a YAML price table:
// unindented model keys (plain or quoted), indented field: number lines.
func parsePriceYAML(b []byte, name string) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), MaxPricesFile)
	model := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if !indented {
			if !strings.HasSuffix(t, ":") {
				return nil, badInput("%s line %d: expected `MODEL:` starting a block, got %q", name, n, t)
			}
			model = unquote(strings.TrimSpace(strings.TrimSuffix(t, ":")))
			if model == "" {
				return nil, badInput("%s line %d: empty model name", name, n)
			}
			out[model] = map[string]float64{}
			continue
		}
		if model == "" {
			return nil, badInput("%s line %d: a field before any model", name, n)
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok {
			return nil, badInput("%s line %d: expected `field: number`, got %q", name, n, t)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, badInput("%s line %d: %s.%s is not a number: %q", name, n, model, strings.TrimSpace(k), strings.TrimSpace(v))
		}
		out[model][unquote(strings.TrimSpace(k))] = f
	}
	if err := sc.Err(); err != nil {
		return nil, badInput("unable to read %s: %v", name, err)
	}
	return out, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// Cost is what u cost under p, in dollars.
func (p Price) Cost(u ModelUsage) float64 {
	out := u.OutputTokens * p.Output
	if p.Reasoning != nil {
		out = (u.OutputTokens-u.ReasoningTokens)*p.Output + u.ReasoningTokens**p.Reasoning
	}
	return (u.InputTokens*p.Input + out) / 1e6
}

// Cost prices a per-model usage table; missing lists the models that have
// tokens but no price (their cost is left out, so the total is then a
// lower bound and callers must say so). Mock call counts cost nothing.
func (ps Prices) Cost(models map[string]ModelUsage) (dollars float64, missing []string) {
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		u := models[m]
		if u.InputTokens == 0 && u.OutputTokens == 0 {
			continue
		}
		p, ok := ps[m]
		if !ok {
			missing = append(missing, m)
			continue
		}
		dollars += p.Cost(u)
	}
	return dollars, missing
}
