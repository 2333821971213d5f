# shellcheck shell=bash disable=SC2154
# Sourced by scripts/test-image and scripts/test-systemd: what both need to build and run
# containers where no registry is reachable. Expects `skip` (prints the script's one-line
# skip and exits 0) and `work` (a scratch folder); sets `base` (a Debian 12 minbase image
# in podman, made once with debootstrap and kept as a tarball under
# $BERTH_CI_CACHE/image) and `run_opts` (what `podman run` needs on this machine).
# Installs podman, buildah, debootstrap, runc, curl, openssl and psql from Debian when
# missing (as root); skips where they cannot be had or containers cannot run.

mirror=${BERTH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The base's recipe version: change it with the recipe below (a cached base is reused).
base=localhost/berth-base:bookworm-1

berth_podman_tools() {
  missing=()
  for tool in podman buildah debootstrap runc curl openssl psql:postgresql-client; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || skip "${missing[*]} missing and not root to install them"
    echo "== installing ${missing[*]} from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; }
  fi
  [ "$(id -u)" = 0 ] || skip "debootstrap and rootful podman need root"
}

berth_podman_base() {
  # The base: Debian 12 minbase, made once and kept (as a tarball) in the CI cache.
  if ! podman image exists "$base"; then
    tarball=$BERTH_CI_CACHE/image/${base##*:}-minbase.tar
    if [ ! -s "$tarball" ]; then
      echo "== debootstrap bookworm (minbase) from $mirror"
      mkdir -p "$(dirname "$tarball")"
      debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
      # As Debian's -slim images: no package lists or caches (the Containerfile fetches them).
      rm -rf "$work"/rootfs/var/cache/apt/* "$work"/rootfs/var/lib/apt/lists/*
      tar -C "$work/rootfs" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
      rm -rf "$work/rootfs"
    fi
    podman import --quiet "$tarball" "$base" >/dev/null
  fi

  # podman raises a container's open-files and processes limits beyond what a machine
  # without CAP_SYS_RESOURCE may set (it refuses even its own hard limit for processes);
  # give containers limits they may have. crun refuses a hybrid cgroup v1/v2 host; runc
  # does not.
  nofile=$(ulimit -Hn)
  run_opts=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
  if ! probe=$(podman run --rm "${run_opts[@]}" "$base" true 2>&1); then
    if podman --runtime runc run --rm "${run_opts[@]}" "$base" true >/dev/null 2>&1; then
      run_opts=(--runtime runc "${run_opts[@]}")
    else
      skip "podman cannot run containers on this machine ($(echo "$probe" | tail -n 1))"
    fi
  fi

  # buildah runs RUN steps with chroot isolation: they need no OCI runtime or cgroups (they
  # only install packages and add users).
  if ! probe=$(ctr=$(buildah from --pull=never "$base") && buildah run --isolation chroot "$ctr" true 2>&1; rc=$?; buildah rm "$ctr" >/dev/null 2>&1; exit $rc); then
    skip "buildah cannot run a build step on this machine ($(echo "$probe" | tail -n 1))"
  fi
}
