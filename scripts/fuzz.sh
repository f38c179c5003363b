#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target (func FuzzX(f *testing.F)) in the module,
# one after another, for a fixed time each. Targets are discovered with
# `go test -list 'Fuzz.*'`, so new ones are picked up without editing this.
# Seed corpora come from the targets' f.Add calls (seeded from
# the module's testdata/) plus any testdata/fuzz/<Target>/ files; new crashers
# are written there by `go test` and should be committed with the fix.
#
# Usage: scripts/fuzz.sh [-fuzztime DURATION] [PACKAGE...]
#   -fuzztime  time per target, as go test -fuzztime takes it (default 60s;
#              also $FUZZTIME); e.g. 10s, 5m, or 100000x for a count
#   PACKAGE    package patterns to search (default ./...)
# Exit status: 0 when every target ran clean, 1 when any target failed
# (all targets still run), 2 on bad usage.
# Example: scripts/fuzz.sh -fuzztime 10s ./ledger/
set -uo pipefail

fuzztime="${FUZZTIME:-60s}"
pkgs=()
while [ $# -gt 0 ]; do
	case "$1" in
	-fuzztime | --fuzztime)
		[ $# -ge 2 ] || { echo "fuzz.sh: -fuzztime needs a value" >&2; exit 2; }
		fuzztime="$2"; shift 2 ;;
	-fuzztime=* | --fuzztime=*) fuzztime="${1#*=}"; shift ;;
	-h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fuzz.sh: unknown flag $1 (see -h)" >&2; exit 2 ;;
	*) pkgs+=("$1"); shift ;;
	esac
done
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

cd "$(dirname "$0")/.." || exit 2
list=$(go list "${pkgs[@]}") || exit 2

ran=0
failed=()
flaked=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for pkg in $list; do
	targets=$(go test -list 'Fuzz.*' "$pkg" 2>/dev/null | grep '^Fuzz') || continue
	for target in $targets; do
		echo "== $pkg $target ($fuzztime)"
		start=$(date +%s)
		corpus="$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$target"
		before=$(ls "$corpus" 2>/dev/null | wc -l)
		# -fuzzminimizetime: go test minimizes every new interesting input
		# for up to 60 s by default, and on this 2-core machine a one-minute
		# run then executed under 1,000 inputs (reported as "0/sec"; see
		# golang/go#48820, #51484); a bounded minimization keeps it fuzzing
		# (~90,000 execs in 20 s for registry.FuzzUnmarshal).
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 200x "$pkg" 2>&1 | tee "$out"; then
			echo "== ok $target in $(($(date +%s) - start))s"
		elif grep -q '^    context deadline exceeded$' "$out" && [ "$(ls "$corpus" 2>/dev/null | wc -l)" -eq "$before" ]; then
			# Go 1.26's fuzz coordinator can fail a clean run at the -fuzztime
			# boundary (golang/go#75804, fixed in Go 1.27). No crasher was
			# written, so this is not a finding. A count budget (-fuzztime
			# 100000x) avoids the race altogether.
			flaked+=("$pkg $target")
			echo "== ok $target in $(($(date +%s) - start))s (coordinator deadline race golang/go#75804, no crasher written)"
		else
			failed+=("$pkg $target")
			echo "== FAIL $pkg $target (crasher, if any, in $corpus)"
		fi
		ran=$((ran + 1))
	done
done

echo "fuzz.sh: ran $ran targets for $fuzztime each; ${#failed[@]} failed; ${#flaked[@]} hit golang/go#75804 at the deadline"
for f in ${failed[@]+"${failed[@]}"}; do echo "  FAIL $f"; done
[ $ran -gt 0 ] || { echo "fuzz.sh: no Fuzz targets found in ${pkgs[*]}" >&2; exit 1; }
[ ${#failed[@]} -eq 0 ]
