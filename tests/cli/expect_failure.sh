#!/bin/sh
# Runs a command that must fail: prints its output, and succeeds only on a non-zero exit.
# ctest then matches the printed message (PASS_REGULAR_EXPRESSION).
"$@" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "expected a non-zero exit"; exit 1; fi
echo "exit-nonzero ($rc)"
