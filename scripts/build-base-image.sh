#!/usr/bin/env bash
# Builds a minimal Debian bookworm root file system with debootstrap and imports it into Docker
# as a local image, for machines that cannot pull images from a registry (tests, CI, air-gapped
# hosts). The Debian mirror is the one this machine's apt already uses. Does nothing when the
# image already exists, unless --force is given.
#
#   scripts/build-base-image.sh [--force] [TAG]     (TAG defaults to memctl-base:bookworm)
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then
    force=1
    shift
fi
tag="${1:-${MEMCTL_BASE_IMAGE:-memctl-base:bookworm}}"
suite=bookworm

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "base image $tag exists; nothing to do (--force rebuilds it)"
    exit 0
fi

# The first http(s) Debian mirror in this machine's apt sources, in either format.
mirror_from_apt() {
    local files=() f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && files+=("$f")
    done
    [ "${#files[@]}" -gt 0 ] || return 1
    {
        # deb822: "URIs: <uri> ..." ; one-line: "deb [opts] <uri> <suite> ..."
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "${files[@]}"
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) { print $i; break } }' "${files[@]}"
    } | grep -E '^https?://' | grep -vE 'security|backports' | head -n 1
}

mirror="${MEMCTL_DEBIAN_MIRROR:-$(mirror_from_apt || true)}"
if [ -z "$mirror" ]; then
    echo "no Debian mirror found in /etc/apt/sources.list*; set MEMCTL_DEBIAN_MIRROR" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing debootstrap..." >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    else
        echo "debootstrap is missing: apt-get install debootstrap (as root), then re-run" >&2
        exit 1
    fi
fi
if [ "$(id -u)" != 0 ]; then
    echo "debootstrap needs root" >&2
    exit 1
fi

rootfs="$(mktemp -d "${TMPDIR:-/tmp}/memctl-rootfs.XXXXXX")"
trap 'rm -rf "$rootfs"' EXIT
echo "debootstrap --variant=minbase $suite from the apt mirror of this machine..." >&2
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
    echo "debootstrap failed; the end of its log:" >&2
    tail -n 20 "$rootfs.log" >&2
    rm -f "$rootfs.log"
    exit 1
}
rm -f "$rootfs.log"
# Keep the image small: no downloaded packages, no package lists (builds run apt-get update).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" --numeric-owner -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    - "$tag" >/dev/null
echo "imported $tag"
