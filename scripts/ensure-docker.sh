#!/usr/bin/env bash
# Makes a Docker engine answer on this machine: installs Debian's docker.io when dockerd is
# missing (as root), then starts dockerd in the background when nothing answers on its socket.
# Exits 0 once `docker info` answers, 1 with the reason otherwise. Used by tests and CI.
set -euo pipefail

log="${MEMCTL_DOCKERD_LOG:-/var/log/memctl-dockerd.log}"

answers() { docker info >/dev/null 2>&1; }

if answers; then
    exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "dockerd is missing: install Docker (apt-get install docker.io) and re-run" >&2
        exit 1
    fi
    echo "installing docker.io (Debian's Docker engine)..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if ! command -v docker >/dev/null 2>&1; then
    echo "the docker client is missing: install docker.io and re-run" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "no Docker engine answers and only root can start dockerd here" >&2
    exit 1
fi
echo "starting dockerd in the background (log: $log)..." >&2
nohup dockerd >"$log" 2>&1 &
for _ in $(seq 1 60); do
    if answers; then
        exit 0
    fi
    if ! kill -0 "$!" 2>/dev/null; then
        echo "dockerd exited at start; the end of its log ($log):" >&2
        tail -n 15 "$log" >&2
        exit 1
    fi
    sleep 1
done
echo "dockerd did not answer within 60 s; see $log" >&2
exit 1
