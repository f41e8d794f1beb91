#!/usr/bin/env bash
# Installs nats-server (the real one, from the Go module proxy) if it is
# missing, and optionally starts one.
#
#   scripts/nats-server.sh install        # install if missing, print its path
#   scripts/nats-server.sh path           # print its path (exit 1 if missing)
#   scripts/nats-server.sh start [PORT]   # install if missing, run on 127.0.0.1:PORT (4222)
#
# The binary goes to $NATS_SERVER_DIR (default: $HOME/go/bin, where
# `go install` puts it). fibra-remote's tests and examples look for it in
# $NATS_SERVER_BIN, then on PATH, then in $HOME/go/bin.
set -euo pipefail

VERSION="v2.15.2"
DIR="${NATS_SERVER_DIR:-$HOME/go/bin}"
BIN="$DIR/nats-server"

find_bin() {
  if [ -n "${NATS_SERVER_BIN:-}" ] && [ -x "$NATS_SERVER_BIN" ]; then
    echo "$NATS_SERVER_BIN"
  elif [ -x "$BIN" ]; then
    echo "$BIN"
  elif command -v nats-server >/dev/null 2>&1; then
    command -v nats-server
  else
    return 1
  fi
}

install() {
  if find_bin >/dev/null; then
    find_bin
    return
  fi
  command -v go >/dev/null 2>&1 || {
    echo "nats-server.sh: Go is needed to install nats-server (go install)" >&2
    exit 1
  }
  echo "nats-server.sh: installing nats-server $VERSION into $DIR" >&2
  mkdir -p "$DIR"
  GOBIN="$DIR" go install "github.com/nats-io/nats-server/v2@$VERSION"
  "$BIN" --version >&2
  echo "$BIN"
}

case "${1:-install}" in
  install) install ;;
  path) find_bin ;;
  start)
    bin="$(install)"
    port="${2:-4222}"
    exec "$bin" --addr 127.0.0.1 --port "$port"
    ;;
  *)
    echo "usage: $0 install | path | start [PORT]" >&2
    exit 2
    ;;
esac
