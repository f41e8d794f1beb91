#!/bin/sh
# Installs the optional peers of fibra-bench from Debian packages:
#   erlang-nox  Erlang/OTP (`erl`, `erlc`)  -> the `erlang` rows
#   racket      Racket (`racket`, `raco`)   -> the `racket` rows
#   wrk         the HTTP load generator      -> the `io` group's HTTP rows
# Go is expected to be installed already (/usr/local/go or PATH).
#
# Usage: sudo sh fibra-bench/setup-peers.sh [PACKAGE...]
#   with no PACKAGE, all of the above; else only those named (of the above),
#   e.g. `sh fibra-bench/setup-peers.sh wrk` (CI).
#
# Idempotent: packages already installed are left alone. Without root, or on
# a system without apt-get, it says what it would do and exits 0: a peer that
# is not installed is skipped by the suite, never a failure. It exits non-zero
# only when apt-get itself fails, or when asked for a package it does not know.
set -u

ALL_PACKAGES="erlang-nox racket wrk"

say() {
    printf 'setup-peers: %s\n' "$*"
}

# A package is installed when dpkg says so.
installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

if [ $# -eq 0 ]; then
    PACKAGES=$ALL_PACKAGES
else
    PACKAGES=""
    for pkg in "$@"; do
        case " $ALL_PACKAGES " in
            *" $pkg "*) PACKAGES="$PACKAGES $pkg" ;;
            *)
                say "unknown package '$pkg' (known: $ALL_PACKAGES)"
                exit 2
                ;;
        esac
    done
    PACKAGES=${PACKAGES# }
fi

report_commands() {
    for cmd in erl erlc racket raco wrk; do
        if command -v "$cmd" >/dev/null 2>&1; then
            say "$cmd: $(command -v "$cmd")"
        else
            say "$cmd: not found (its rows will be skipped)"
        fi
    done
}

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    say "apt-get/dpkg not available: install Erlang/OTP, Racket and wrk by other means (optional)"
    report_commands
    exit 0
fi

missing=""
for pkg in $PACKAGES; do
    if installed "$pkg"; then
        say "$pkg: already installed"
    else
        missing="$missing $pkg"
    fi
done
missing=${missing# }

if [ -z "$missing" ]; then
    say "nothing to do"
    report_commands
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    say "not root: would run 'apt-get update && apt-get install -y --no-install-recommends $missing'"
    say "run this script as root (e.g. sudo sh $0) to install them (optional)"
    report_commands
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
say "running: apt-get update"
if ! apt-get update -q; then
    say "apt-get update failed"
    exit 1
fi
say "running: apt-get install -y --no-install-recommends $missing"
# shellcheck disable=SC2086 # word splitting of the package list is wanted
if ! apt-get install -y -q --no-install-recommends $missing; then
    say "apt-get install failed"
    exit 1
fi
say "installed: $missing"
report_commands
