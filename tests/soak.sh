#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Soak test: 60 s of mixed admissions and Job churn
# against $BUILD/volcano-plugin-webhook under valgrind memcheck; zero errors and no
# definite leaks. The work is done by tests/soak.py; flags are passed on to it
# (--seconds N, --seed N, --keep). About two minutes in all.
#   make soak                 (BUILD=build)
#   tests/soak.sh --seconds 20
set -eu
cd "$(dirname "$0")/.."
export BUILD="${BUILD:-build}"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "soak: valgrind not found (apt-get install valgrind)" >&2
    exit 1
fi
exec /usr/bin/python3 tests/soak.py "$@"
