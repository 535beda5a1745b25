#!/usr/bin/env bash
# Builds leafproxy's container image (deploy/container/Containerfile) with podman, or docker when
# podman is missing: the static binary is built here (CGO_ENABLED=0, no Go image pulled), then
# copied into an image FROM scratch that runs as the non-root user leafproxy (65532).
#
#   scripts/build-image.sh [TAG]          # default tag: localhost/leafproxy:dev
#   LEAFPROXY_IMAGE_TOOL=docker scripts/build-image.sh
#   LEAFPROXY_IMAGE_VERSION=1.0.0 ...     # the version `leafproxy version` prints
#
# Exit status 3 when neither podman nor a working docker is present (scripts/test.sh then skips).
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-localhost/leafproxy:dev}"
tool="${LEAFPROXY_IMAGE_TOOL:-}"
if [ -z "$tool" ]; then
	if command -v podman >/dev/null; then
		tool=podman
	elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
		tool=docker
	else
		echo "build-image: neither podman nor a running docker found" >&2
		exit 3
	fi
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
version="${LEAFPROXY_IMAGE_VERSION:-}" # empty: the released version (internal/buildinfo.Release)
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$ctx/leafproxy" ./cmd/leafproxy
printf 'leafproxy:x:65532:65532:leafproxy:/var/lib/leafproxy:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$ctx/passwd"
printf 'leafproxy:x:65532:\nnobody:x:65534:\n' >"$ctx/group"
if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
	cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
else
	: >"$ctx/ca-certificates.crt"
fi
mkdir "$ctx/state"
cp deploy/container/Containerfile "$ctx/Containerfile"
echo "== $tool build -t $tag (static binary: $(du -h "$ctx/leafproxy" | cut -f1))"
"$tool" build -q -t "$tag" -f "$ctx/Containerfile" "$ctx"
"$tool" image inspect --format '{{.Id}} {{.Size}} bytes, user {{.Config.User}}' "$tag"

# LEAFPROXY_IMAGE_SMOKE=1: run the image once: `leafproxy version`, then `serve` with a
# configuration mounted at /etc/leafproxy/leafproxy.yaml, on the host's network bound to loopback
# only (a backend that does not answer: the proxy starts anyway), until /healthz answers 503 and
# the ID API 401; the process must run as uid 65532. Where this machine cannot run containers
# (no cgroup support for the runtime, limits it may not set), it says so and exits 0: the build
# is what the test command checks.
[ "${LEAFPROXY_IMAGE_SMOKE:-}" = 1 ] || exit 0
glob=()  # the tool's global flags
ropts=() # run's flags
if ! out=$("$tool" run --rm "$tag" version 2>&1); then
	# Sandboxes without cgroup v2 (crun refuses hybrid mode) or CAP_SYS_RESOURCE: try runc
	# and the limits the shell already has.
	[ "$tool" = podman ] && command -v runc >/dev/null && glob=(--runtime runc)
	ropts=(--ulimit "nofile=$(ulimit -n):$(ulimit -n)" --ulimit "nproc=4096:4096")
	if ! out=$("$tool" "${glob[@]}" run --rm "${ropts[@]}" "$tag" version 2>&1); then
		echo "== image built; this machine cannot run containers, smoke run skipped: $out"
		exit 0
	fi
fi
echo "== $out"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
lp=$(port) mp=$(port) ap=$(port)
cat >"$ctx/leafproxy.yaml" <<YAML
listen: 127.0.0.1:$lp
backend: {addr: "127.0.0.1:1", connect_timeout: 1s}
metrics: {listen: "127.0.0.1:$mp"}
id_api:
  listen: 127.0.0.1:$ap
  tokens: [{name: smoke, token_env: LEAFPROXY_SMOKE_TOKEN, tags: ["*"]}]
YAML
chmod 0644 "$ctx/leafproxy.yaml"
name="leafproxy-smoke-$$"
trap '"$tool" "${glob[@]}" rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$ctx"' EXIT
"$tool" "${glob[@]}" run -d --name "$name" --network host "${ropts[@]}" -e LEAFPROXY_SMOKE_TOKEN=smoke-token-0123456789 \
	-v "$ctx/leafproxy.yaml:/etc/leafproxy/leafproxy.yaml:ro" "$tag" >/dev/null
health=""
for _ in $(seq 1 100); do
	health=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mp/healthz" || true)
	[ "$health" = 503 ] && break
	sleep 0.1
done
api=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ap/api/segment/get/x" || true)
user=$("$tool" "${glob[@]}" inspect --format '{{.Config.User}}' "$name" 2>/dev/null || true)
if [ "$health" != 503 ] || [ "$api" != 401 ] || [ "$user" != 65532:65532 ]; then
	echo "smoke run failed: /healthz $health (want 503), ID API $api (want 401), user '$user' (want 65532:65532)" >&2
	"$tool" "${glob[@]}" logs "$name" >&2 || true
	exit 1
fi
echo "== smoke run: serve as uid 65532 on loopback, /healthz 503 (no backend), ID API 401 without a token"
