#!/usr/bin/env bash
# compare.sh BUILD_A BUILD_B [OUT] — runs.sh with each build's train, then every file of
# one against the other, byte for byte: losses, peaks, FLOPs, dumps and saved files.
# Prints a DIFF line per file that differs (and the first lines of each difference) and
# exits 1 if any does. For example, a checkout at another commit built in /tmp/old:
#   tests/bitwise/compare.sh /tmp/old/build build
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${3:-$(mktemp -d)}
"$here/runs.sh" "$1" "$out/a" >/dev/null 2>&1
"$here/runs.sh" "$2" "$out/b" >/dev/null 2>&1
rc=0
for f in "$out"/a/* "$out"/b/*; do
    n=$(basename "$f")
    if [ ! -e "$out/a/$n" ] || [ ! -e "$out/b/$n" ]; then echo "ONLY IN ONE: $n"; rc=1; continue; fi
    [ "$f" = "$out/b/$n" ] && continue
    if ! cmp -s "$out/a/$n" "$out/b/$n"; then
        echo "DIFF $n"; rc=1
        case "$n" in *.out) diff "$out/a/$n" "$out/b/$n" | head -n 8 ;; esac
    fi
done
echo "$(ls "$out/a" | wc -l) files compared in $out: $([ $rc = 0 ] && echo identical || echo differences above)"
exit $rc
