#!/usr/bin/env bash
# deploy/check.sh (make deploy-check): validates what deploy/ ships, without a
# container engine or a cluster.
#
#   - the compose file, with Debian's docker-compose (`config -q`);
#   - every kustomization: the base, each overlay, and each component on the
#     base, with `kubectl kustomize`;
#   - the systemd unit, with `systemd-analyze verify`, and its sysusers file,
#     with `systemd-sysusers` (Debian's systemd package; .ci/run installs it,
#     and a machine without them fails the check rather than skip it).
#
# systemd-analyze reports unknown keys and bad values as warnings and still
# exits 0, so any output of it fails the check. It also checks that
# ExecStart's program exists: the unit is verified as a copy whose durawait
# path is /bin/true, since durawait is not installed where the check runs.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0
fail() {
	echo "deploy-check: $*" >&2
	failed=1
}

need() {
	command -v "$1" >/dev/null || { echo "deploy-check: $1 is not installed ($2)" >&2; exit 1; }
}
need docker-compose "apt-get install -y docker-compose"
need kubectl "apt-get install -y kubectl"

echo "== docker-compose config: deploy/compose/docker-compose.yml"
docker-compose -f deploy/compose/docker-compose.yml config -q || fail "deploy/compose/docker-compose.yml is not valid"

for dir in deploy/k8s/base deploy/k8s/overlays/*/; do
	dir=${dir%/}
	echo "== kubectl kustomize $dir"
	kubectl kustomize "$dir" >/dev/null || fail "$dir does not render"
done

# Each component, on the base (as an overlay uses it), from a scratch
# kustomization beside them: kustomize takes relative paths only.
for dir in deploy/k8s/components/*/; do
	name=$(basename "$dir")
	echo "== kubectl kustomize: the base with components/$name"
	scratch=$(mktemp -d -p deploy/k8s .check-XXXXXX)
	trap 'rm -rf "$scratch"' EXIT
	printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\ncomponents:\n  - ../components/%s\n' \
		"$name" >"$scratch/kustomization.yaml"
	kubectl kustomize "$scratch" >/dev/null || fail "components/$name does not render on the base"
	rm -rf "$scratch"
done

for tool in systemd-analyze systemd-sysusers; do
	command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install systemd): the systemd files are not checked"
done

if command -v systemd-analyze >/dev/null; then
	echo "== systemd-analyze verify deploy/systemd/durawait.service"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	sed 's#/usr/local/bin/durawait#/bin/true#g' deploy/systemd/durawait.service >"$tmp/durawait.service"
	if ! out=$(systemd-analyze verify "$tmp/durawait.service" 2>&1) || [ -n "$out" ]; then
		echo "$out" >&2
		fail "deploy/systemd/durawait.service does not verify"
	fi
fi

if command -v systemd-sysusers >/dev/null; then
	# Creates the user in a scratch root (copies of the machine's user
	# databases), so a line systemd-sysusers refuses fails here.
	echo "== systemd-sysusers deploy/systemd/durawait.sysusers"
	root=$(mktemp -d)
	mkdir "$root/etc"
	for db in passwd group shadow gshadow; do
		if [ -r "/etc/$db" ]; then cp "/etc/$db" "$root/etc/"; fi
	done
	if ! out=$(systemd-sysusers --root="$root" "$PWD/deploy/systemd/durawait.sysusers" 2>&1) ||
		! grep -q '^durawait:.*:/var/lib/durawait:' "$root/etc/passwd"; then
		echo "$out" >&2
		fail "deploy/systemd/durawait.sysusers does not create the durawait user with its home"
	fi
	rm -rf "$root"
fi

if [ "$failed" -ne 0 ]; then
	exit 1
fi
echo "deploy-check: ok"
