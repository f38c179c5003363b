package arcmemo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// FlattenConfig turns a nested config (mem2's frozen_config.json) into
// dotted keys, each leaf written as compact JSON except strings, which are
// kept as they are ("model" → mock-grid-echo, "timeout_s" → 2.0 as 2,
// lists as one JSON value). Empty maps leave no key.
func FlattenConfig(cfg map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, raw json.RawMessage)
	walk = func(prefix string, raw json.RawMessage) {
		raw = bytes.TrimSpace(raw)
		var obj map[string]json.RawMessage
		var str string
		switch {
		case len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &obj) == nil:
			for k, v := range obj {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, v)
			}
		case len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &str) == nil:
			out[prefix] = str
		case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
			var f float64
			if json.Unmarshal(raw, &f) != nil {
				out[prefix] = "?"
				return
			}
			b, _ := json.Marshal(f) // 2.0 as 2, as every number is written
			out[prefix] = string(b)
		default:
			// Numbers, booleans, null and arrays keep their JSON text
			// (compacted): never decoded, so a hostile config cannot
			// amplify here (issue 24.9).
			var b bytes.Buffer
			if json.Compact(&b, raw) != nil {
				out[prefix] = "?"
				return
			}
			out[prefix] = b.String()
		}
	}
	for k, v := range cfg {
		walk(k, v)
	}
	return out
}

// repRe matches mem2's replicate suffix: baseline_rep2 … baseline_rep5.
var repRe = regexp.MustCompile(`^(.+?)_rep([0-9]+)$`)

// ConfigName strips a replicate suffix (_repN) from a run type: the
// replicates of one configuration share the name. rep is N (1 when there
// is no suffix: the first replicate is usually unnamed).
func ConfigName(runType string) (name string, rep int) {
	if m := repRe.FindStringSubmatch(runType); m != nil {
		n, _ := strconv.Atoi(m[2])
		return m[1], n
	}
	return runType, 1
}

// identityKey reports whether a flattened config key names the run rather
// than its configuration: seeds, run ids and names, and folders (output
// and data roots; input files count by name, see fileKey). The puzzle set
// is compared separately (PuzzleSetID).
func identityKey(key string) bool {
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	switch last {
	case "seed", "run_id", "run_type", "output_root", "output_dir", "_base_", "source_run_dir", "name":
		if last == "name" {
			return strings.HasPrefix(key, "hydra.")
		}
		return true
	}
	if strings.HasPrefix(key, "hydra.") {
		return true // Hydra's own bookkeeping (run dir, job name, overrides)
	}
	for _, suf := range []string{"_root", "_dir", "_path"} {
		if strings.HasSuffix(last, suf) {
			return true
		}
	}
	return false
}

// fileKey reports whether a config key names an input file (a seed memory
// or lessons file): its folder is where the file happens to be, its name
// says which memory it is, so only the name counts.
func fileKey(key string) bool {
	return strings.HasSuffix(key, "_file") || strings.HasSuffix(key, "_files")
}

// fileName is the name part of a file key's value (the whole value for
// lists and null).
func fileName(v string) string {
	if i := strings.LastIndexAny(v, `/\`); i >= 0 && !strings.HasPrefix(v, "[") {
		return v[i+1:]
	}
	return v
}

// ConfigFingerprint hashes a flattened config without its identity keys
// (identityKey): two runs with the same fingerprint are replicates of one
// configuration, whatever their seeds, run ids, names or paths.
func ConfigFingerprint(flat map[string]string) string {
	keys := make([]string, 0, len(flat))
	for k := range flat {
		if !identityKey(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		v := flat[k]
		if fileKey(k) {
			v = fileName(v)
		}
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return "cfg-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// PuzzleSetID names a puzzle set by its content: the sorted puzzle ids,
// hashed. Scores are comparable only within one set.
func PuzzleSetID(uids []string) string {
	s := append([]string(nil), uids...)
	sort.Strings(s)
	h := sha256.Sum256([]byte(strings.Join(s, "\n")))
	return "ps-" + hex.EncodeToString(h[:])[:12]
}

// ScoringKey reports whether a config key changes how results are scored
// or produced in a way a reader must see next to a score difference: the
// evaluator's require_all_tests and timeout, the retry criterion, whether
// the hint reaches the prompt, the model and its temperature, and how much
// memory is kept and retrieved (max_entries, top_k).
func ScoringKey(key string) bool {
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	switch last {
	case "require_all_tests", "retry_criterion", "include_hint", "model", "temperature", "max_entries", "top_k":
		return true
	case "criterion":
		return strings.Contains(key, "retry")
	case "name":
		return key == "model.name"
	}
	return strings.HasPrefix(last, "timeout") && strings.Contains(key, "evaluator")
}

// ConfigChange is one key whose value differs between two configs.
type ConfigChange struct {
	Key     string `json:"key"`
	A       string `json:"a"` // "" with InA false: absent
	B       string `json:"b"`
	InA     bool   `json:"in_a"`
	InB     bool   `json:"in_b"`
	Scoring bool   `json:"scoring"` // ScoringKey: changes how results are scored
	Name    bool   `json:"identity"`
}

// DiffConfig lists every key whose value differs between a and b, sorted
// with the scoring keys first, then by key. Identity keys (seed, run ids,
// paths) are listed too, marked, so nothing is hidden.
func DiffConfig(a, b map[string]string) []ConfigChange {
	var out []ConfigChange
	seen := map[string]bool{}
	add := func(k string) {
		if seen[k] {
			return
		}
		seen[k] = true
		va, ina := a[k]
		vb, inb := b[k]
		if ina == inb && va == vb {
			return
		}
		name := identityKey(k) || (fileKey(k) && ina && inb && fileName(va) == fileName(vb))
		out = append(out, ConfigChange{Key: k, A: va, B: vb, InA: ina, InB: inb, Scoring: ScoringKey(k), Name: name})
	}
	for k := range a {
		add(k)
	}
	for k := range b {
		add(k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scoring != out[j].Scoring {
			return out[i].Scoring
		}
		if out[i].Name != out[j].Name {
			return !out[i].Name
		}
		return out[i].Key < out[j].Key
	})
	return out
}
